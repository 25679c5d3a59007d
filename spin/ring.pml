/*
 * spin/ring.pml - Promela model of the user-space ring buffer's
 * reserve / claim / commit / reader-swap protocol (common/ring.c,
 * common/ring_reader.c), overwrite mode, where the reader's swap and a
 * writer's entry into the next lap race on one slot tag.
 *
 * Scaled down: W writers write E one-unit events each into a buffer of
 * N slots of D units, with N + 1 physical pages. Each shared-memory word
 * access of the C code is one atomic step here; each cmpxchg is one
 * atomic compare-and-store; everything between is interleavable. Ghost
 * variables record which virtual page each event went to.
 *
 * A slot's committed count is two words: commit_l (atomic add from any
 * CPU) and commit_c (the rseq add on the buffer's own CPU); writer 0
 * commits on the buffer's CPU, writer 1 as one that migrated since it
 * reserved (a free choice per event multiplies the states by 20 for no
 * new case), and everybody who reads the count reads the two words one
 * after the other. The rseq reservation is the same atomic
 * compare-and-store as the cmpxchg16b one.
 *
 * Checked (assertions, and the end state):
 *  - a writer never writes into the page the reader holds;
 *  - every page the reader takes holds exactly the committed events of
 *    the virtual page it asked for (no stale, torn or foreign data);
 *  - no event is read twice;
 *  - at the end each event was read, dropped (counted), overwritten
 *    (counted by the lap-change bookkeeping), or is still in the ring.
 *
 * Run: spin -a ring.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 */
#define W 2
#define E 3
#define N 2
#define D 2
#define NEV (W * E)

byte wpage = N - 1;		/* wpos: virtual page ... */
byte woff = D;			/* ... and offset: lap 0 is a full dummy */
byte tag_seq[N];
byte tag_phys[N];
bool tag_took[N];
byte commit_l[N];		/* committed units over all laps: */
byte commit_c[N];		/* ... the sum of the two */
byte ev_base[N];		/* committed units when the lap began */
byte rpos = N;
byte reader_phys = N;
bool holding;			/* the reader is reading reader_phys */

byte data[(N + 1) * D];		/* event id + 1 per physical unit */
byte vpage_of[NEV];		/* ghost: virtual page of each event */
bool committed[NEV];
bool dropped[NEV];
bool ovw[NEV];			/* ghost: its page was overwritten */
byte nread[NEV];
byte lost_busy, lost_over;
byte done;

inline lap_change(s, q, was_taken, ev)
{
	/* the claim winner: count the events of the page it overwrites */
	if
	:: !was_taken ->
		atomic {
			lost_over = lost_over + ev - ev_base[s];
			k = 0;
			do
			:: k < NEV ->
				if
				:: committed[k] && vpage_of[k] == q - N ->
					ovw[k] = true
				:: else
				fi;
				k++
			:: else -> break
			od
		};
		atomic { if :: rpos <= q - N -> rpos = q - N + 1 :: else fi }
	:: else
	fi;
	ev_base[s] = ev
}

proctype writer(byte me)
{
	byte i = 0, wp, wo, q, s, ph, off, k, id, ev, cl;
	bool enter, ok, won, took;

	do
	:: i < E ->
		id = me * E + i;
		atomic { wp = wpage; wo = woff };
		enter = (wo == D);
		if
		:: enter -> q = wp + 1
		:: else -> q = wp
		fi;
		s = q % N;
		cl = commit_l[s];
		ev = cl + commit_c[s];
		if
		:: enter && ev != (q / N) * D ->
			/* previous lap still being committed: drop */
			dropped[id] = true; lost_busy++; i++
		:: else ->
			atomic {
				ok = (wpage == wp && woff == wo);
				if
				:: ok && enter -> wpage = q; woff = 1; off = 0
				:: ok && !enter -> woff = wo + 1; off = wo
				:: else
				fi
			};
			if
			:: ok ->
				/* claim: make the tag say page q */
				do
				:: cl = commit_l[s];	/* before the cmpxchg */
				   ev = cl + commit_c[s];
				   atomic {
					if
					:: tag_seq[s] < q ->
						took = tag_took[s];
						tag_seq[s] = q;
						tag_took[s] = false;
						won = true
					:: else -> won = false
					fi
				   };
				   if
				   :: won -> lap_change(s, q, took, ev)
				   :: else -> break
				   fi
				od;
				ph = tag_phys[s];
				atomic {
					assert(!(holding && ph == reader_phys));
					data[ph * D + off] = id + 1;
					vpage_of[id] = q
				};
				if
				:: me == 1 -> atomic { commit_l[s]++; committed[id] = true }
				:: else -> atomic { commit_c[s]++; committed[id] = true }
				fi;
				i++
			:: else	/* lost the cmpxchg: retry */
			fi
		fi
	:: else -> break
	od;
	done++
}

proctype reader()
{
	byte r, s, seq, ph, k, id, cl, cc;
	bool took, ok;

	do
	:: done == W && rpos > wpage -> break
	:: else ->
		r = rpos;
		s = r % N;
		atomic { seq = tag_seq[s]; ph = tag_phys[s]; took = tag_took[s] };
		if
		:: seq > r ->
			atomic { if :: rpos == r -> rpos = seq - N + 1 :: else fi }
		:: seq == r ->
			cl = commit_l[s];
			cc = commit_c[s];
			if
			:: cl + cc == (r / N + 1) * D ->
				atomic {
					ok = (tag_seq[s] == seq && tag_phys[s] == ph &&
					      tag_took[s] == took);
					if
					:: ok ->
						tag_phys[s] = reader_phys;
						tag_took[s] = true;
						reader_phys = ph;
						holding = true
					:: else
					fi
				};
				if
				:: ok ->
					atomic { if :: rpos == r -> rpos = r + 1 :: else fi };
					k = 0;
					do
					:: k < D ->
						id = data[ph * D + k] - 1;
						assert(committed[id]);
						assert(vpage_of[id] == r);
						nread[id]++;
						assert(nread[id] == 1);
						k++
					:: else -> break
					od;
					holding = false
				:: else
				fi
			:: else ->
				if
				:: done == W -> break
				:: else
				fi
			fi
		:: else ->
			/* nothing complete: end of run, or wait for writers */
			if
			:: done == W -> break
			:: else
			fi
		fi
	od
}

init
{
	byte s = 0, k;

	do
	:: s < N ->
		tag_seq[s] = s; tag_phys[s] = s; tag_took[s] = true;
		commit_l[s] = D;
		ev_base[s] = D;
		s++
	:: else -> break
	od;
	atomic {
		run writer(0);
		run writer(1);
		run reader()
	};
	(done == W);
	/* every event accounted for exactly once */
	(_nr_pr == 1);
	k = 0;
	do
	:: k < NEV ->
		assert(dropped[k] + nread[k] + ovw[k] <= 1);
		assert(!committed[k] || dropped[k] == 0);
		k++
	:: else -> break
	od;
	k = 0; s = 0;
	do
	:: k < NEV -> s = s + ovw[k]; k++
	:: else -> break
	od;
	assert(s == lost_over)
}
