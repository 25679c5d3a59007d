# tests/fuzz/tracedat_seeds.py DIR - write the seed corpus of fuzz_tracedat into DIR:
# the smallest trace.dat files (v6, v7 uncompressed, v7 zstd) of one
# sched_wakeup format and two pages, built from the documented layout
# (trace-cmd report reads them). Needs the zstd program.
# makes small trace.dat files (v6, v7 none, v7 zstd) from a real one's pieces
import struct, subprocess, sys
def z(b): return subprocess.run(['zstd','-q','-c','--no-check'],input=b,capture_output=True).stdout
hp=b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n"
he=b"# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n"
fmt=b"name: sched_wakeup\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu\n"
def page(ts):
    ev=struct.pack('<IHBBi16siii', (36//4)<<0 | (0<<5), 316,0,0,1,b'sh',7,120,1)
    ev=struct.pack('<I',9)+ev[4:]  # type_len 9 (36 bytes), delta 0
    data=ev
    return (struct.pack('<QQ',ts,len(data))+data).ljust(4096,b'\0')
pages=[page(1000),page(2000)]
hdr=b'\x17\x08Dtracing'
def meta_hi(): return b'header_page\0'+struct.pack('<Q',len(hp))+hp+b'header_event\0'+struct.pack('<Q',len(he))+he
def meta_ft(): return struct.pack('<I',0)
def meta_ev(): return struct.pack('<I',1)+b'sched\0'+struct.pack('<I',1)+struct.pack('<Q',len(fmt))+fmt
ks=b'ffffffff81000000 T _stext\n'; pk=b'0xffffffff82000000 : "hello %d\\n"\n'; cl=b'1 sh\n7 sh\n'
def meta_ks(): return struct.pack('<I',len(ks))+ks
def meta_pk(): return struct.pack('<I',len(pk))+pk
def meta_cl(): return struct.pack('<Q',len(cl))+cl
def opt(i,d): return struct.pack('<HI',i,len(d))+d
def v6():
    b=hdr+b'6\0'+bytes([0,8])+struct.pack('<I',4096)+meta_hi()+meta_ft()+meta_ev()+meta_ks()+meta_pk()+meta_cl()+struct.pack('<I',1)
    b+=b'options  \0'+opt(4,b'[mono] local\n')+struct.pack('<H',0)+b'flyrecord\0'
    off=(len(b)+16+4095)//4096*4096
    b+=struct.pack('<QQ',off,8192); b=b.ljust(off,b'\0')+b''.join(pages); return b
def v7(comp):
    b=bytearray(hdr+b'7\0'+bytes([0,8])+struct.pack('<I',4096)+(b'zstd\x001.5.4\0' if comp else b'none\0\0'))
    first=len(b); b+=b'\0'*8
    secs={}
    def sec(i,data,c=comp):
        o=len(b)
        if c:
            zd=z(data); d=struct.pack('<II',len(zd),len(data))+zd
        else: d=data
        b.extend(struct.pack('<HHIQ',i,1 if c else 0,0,len(d))+d); return o
    for i,f in ((16,meta_hi),(17,meta_ft),(18,meta_ev),(19,meta_ks),(20,meta_pk),(21,meta_cl)): secs[i]=sec(i,f())
    # buffer section header then data
    bo=len(b); b.extend(struct.pack('<HHIQ',3,1 if comp else 0,0,0))
    off=(len(b)+4095)//4096*4096; b.extend(b'\0'*(off-len(b)))
    if comp:
        data=b''.join(pages); zd=z(data); cpu=struct.pack('<I',1)+struct.pack('<II',len(zd),len(data))+zd; size=len(cpu)-4
    else: cpu=b''.join(pages); size=len(cpu)
    b.extend(cpu)
    opts=b''.join(opt(i,struct.pack('<Q',o)) for i,o in secs.items())
    opts+=opt(4,b'[mono] local\n')+opt(3,struct.pack('<Q',bo)+b'\0mono\0'+struct.pack('<II',4096,1)+struct.pack('<IQQ',0,off,size))+opt(0,struct.pack('<Q',0))
    oo=len(b); b.extend(struct.pack('<HHIQ',0,0,0,len(opts))+opts)
    b[first:first+8]=struct.pack('<Q',oo); return bytes(b)
d=sys.argv[1]
open(d+'/v6.dat','wb').write(v6()); open(d+'/v7none.dat','wb').write(v7(False)); open(d+'/v7zstd.dat','wb').write(v7(True))
