#!/usr/bin/env python3
# tracedat_bomb.py IN.dat OUT.dat N - a trace-cmd v6 file of N event types
# (system "bomb", events ev0..ev{N-1}, each with one int field x) and one
# event of each type on CPU 0, built from IN.dat's header sections (a
# real v6 recording: header_page, header_event, kallsyms, printk formats,
# cmdlines; its ftrace and event formats are left out). The schema-explosion attack of issue 30 as a
# file traceq --import sends through the agents' ingest path.
import struct
import sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = open(src, 'rb').read()
magic = b'\x17\x08\x44tracing'
assert d.startswith(magic), 'not a trace-cmd file'
p = len(magic)
ver_end = d.index(b'\0', p)
assert d[p:ver_end] == b'6', 'a v6 file is needed'
p = ver_end + 1
endian, long_size = d[p], d[p + 1]
assert endian == 0, 'little endian only'
page_size = struct.unpack_from('<I', d, p + 2)[0]
p += 6


def blob(p, size_len):
    size = struct.unpack_from('<Q' if size_len == 8 else '<I', d, p)[0]
    return p + size_len + size


head_end = p
assert d[p:p + 12] == b'header_page\0'
p = blob(p + 12, 8)
assert d[p:p + 13] == b'header_event\0'
p = blob(p + 13, 8)
head = d[:p] + struct.pack('<I', 0)		# no ftrace formats: N types in all
count = struct.unpack_from('<I', d, p)[0]
p += 4
for _ in range(count):
    p = blob(p, 8)
systems = struct.unpack_from('<I', d, p)[0]	# event formats: skipped
p += 4
for _ in range(systems):
    p = d.index(b'\0', p) + 1
    count = struct.unpack_from('<I', d, p)[0]
    p += 4
    for _ in range(count):
        p = blob(p, 8)
tail_start = p
p = blob(p, 4)			# kallsyms
p = blob(p, 4)			# printk formats
p = blob(p, 8)			# cmdlines
tail = d[tail_start:p]
cpus = struct.unpack_from('<I', d, p)[0]

FMT = ('name: ev%d\nID: %d\nformat:\n'
       '\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n'
       '\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n'
       '\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n'
       '\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n'
       '\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\n'
       'print fmt: "x=%%d", REC->x\n')
BASE_ID = 20000
out = bytearray(head)
out += struct.pack('<I', 1) + b'bomb\0' + struct.pack('<I', n)
for i in range(n):
    f = (FMT % (i, BASE_ID + i)).encode()
    out += struct.pack('<Q', len(f)) + f
out += tail + struct.pack('<I', cpus)
out += b'options  \0' + struct.pack('<H', 0)	# no options
out += b'flyrecord\0'
table_at = len(out)
out += b'\0' * (16 * cpus)

# the pages: per event a 4-byte header (type_len 3: 12 bytes of data,
# time delta 1000) and common_type, flags, preempt count, pid, x
pages = []
per_page = (page_size - 16) // 16
ts = 1000000000
for first in range(0, n, per_page):
    evs = b''
    for i in range(first, min(n, first + per_page)):
        evs += struct.pack('<IHBBii', 3 | (1000 << 5), BASE_ID + i, 0, 0, 1, i)
    pages.append(struct.pack('<QQ', ts, len(evs)) + evs + b'\0' * (page_size - 16 - len(evs)))
    ts += 1000 * per_page + 1000
data_at = (len(out) + page_size - 1) // page_size * page_size
out += b'\0' * (data_at - len(out))
struct.pack_into('<QQ', out, table_at, data_at, len(pages) * page_size)
for c in range(1, cpus):
    struct.pack_into('<QQ', out, table_at + 16 * c, data_at + len(pages) * page_size, 0)
for pg in pages:
    out += pg
open(dst, 'wb').write(out)
