/*
 * SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
 *
 * Promela model of the xvi stream protocol (docs/PROTOCOL.md, section 12):
 * one connection between a client node (connect, send N bytes, close) and a
 * server node (listen, accept, read to end of stream, close), over a
 * channel that loses, duplicates and reorders segments.  It follows what
 * libxvi/stream does, one C function per inline below (the map is in the
 * comment of each); keep both in step.
 *
 * Abstractions (what the C code has and the model has not):
 *  - one byte per segment (mss = 1), a window of W = 2 segments, N = 3
 *    bytes from the client, none from the server; sequence numbers modulo
 *    16 with serial comparison (seq_lt/seq_gt in wire.h), ISNs chosen so
 *    the client's sequence space wraps through 0;
 *  - no time: a timer that may fire early (delayed ACK) fires at any
 *    moment; the retransmission timer fires when nothing else can happen
 *    (Promela's timeout) or, EARLY times in all, at any moment (a spurious
 *    timeout); TIME_WAIT ends when nothing else can happen and the peer no
 *    longer retransmits a FIN (section 7: TIME_WAIT outlasts the peer's
 *    retransmissions);
 *  - RACK (recovery.c) is a choice: an ACK that delivers a segment may
 *    mark any earlier unSACKed segment lost, or leave it to the RTO; RTT,
 *    timestamps, Eifel undo, cwnd/PRR and tail loss probes only change when
 *    things are sent and are left out (cwnd never blocks: pipe 0 always
 *    sends); the receiver reads at once (no zero window, no persist timer);
 *    no keepalive or user timeout (with ABORT they are aborts like any
 *    other); the ids of one connection and a listener are modelled,
 *    addresses are not.
 *
 * Configurations (cpp): default: orderly close, the server may half-close
 * (shutdown SHUT_WR) at any time; -DABORT: either application may also
 * abort (xvi_ss__abort, or the linger/user/keepalive timeouts, which do the
 * same) at any moment.  -DMUTANT_NORETX removes retransmission (a broken
 * protocol the checks must reject: tests/spin/run.sh).
 */

#ifndef NBYTES
#define NBYTES	3	/* bytes the client sends */
#endif
#define W	2	/* receive window, segments of one byte */
#define M	16	/* sequence modulus */
#ifndef CAP
#define CAP	3	/* segments a bag holds: a full one drops */
#endif
#ifndef LOSS
#define LOSS	1	/* segments the channel may drop */
#endif
#ifndef DUPS
#define DUPS	1	/* segments the channel may duplicate */
#endif
#ifndef EARLY
#define EARLY	1	/* early (spurious) retransmission timeouts */
#endif

#define ISS_C	13	/* client ISN: data 14, 15, 0; FIN 1 */
#define ISS_S	6

/* sequence arithmetic (wire.h) */
#define S(x)		((x) % M)
#define D(a, b)		(((a) + M - (b)) % M)
#define GT(a, b)	(D(a, b) != 0 && D(a, b) < M / 2)
#define LT(a, b)	GT(b, a)
#define GE(a, b)	(!LT(a, b))
#define LE(a, b)	(!GT(a, b))

/* states (enum xvi_stream_state) */
#define CLOSED		0
#define LISTEN		1
#define SYN_SENT	2
#define SYN_RCVD	3
#define ESTAB		4
#define CLOSE_WAIT	5
#define FIN_WAIT_1	6
#define CLOSING		7
#define LAST_ACK	8
#define FIN_WAIT_2	9
#define TIME_WAIT	10

/* segment flags (wire.h XVI_SF_*), plus DATA: one payload byte */
#define F_SYN	1
#define F_ACK	2
#define F_FIN	4
#define F_RST	8
#define F_PRB	16
#define F_DATA	32

#define NOCID	7	/* scid 0xffffffff: an RST from no connection */
#define NOSACK	16

/* errors (errno) */
#define E_REFUSED	1
#define E_RESET		2

/* The byte at offset k of node n's stream: distinct symbols. */
#define BYTE(n, k)	(1 + (k) + 8 * (n))

typedef Seg {
	byte fl;
	byte seq;
	byte ack;
	byte wnd;
	byte sk;	/* SACK block [sk, sk + 1) or NOSACK */
	byte d;		/* payload byte (F_DATA) */
	byte sc;	/* scid: the sender's connection id, 0 none */
	byte dc;	/* dcid: the receiver's connection id, 0 none */
};

/*
 * ch[i]: segments from node i to node 1 - i, an unordered bag: any segment
 * may be taken next (reordering).  A segment is packed into one int and
 * the bag kept sorted, so that bags holding the same segments are one
 * state.  The faults happen as a segment is put in: it is dropped, or put
 * in twice (its copy can still be taken at any later time, so this loses
 * no behaviour).
 */
#define PACK(s)	((s.fl << 25) | (s.seq << 21) | (s.ack << 17) | (s.wnd << 15) | \
		 (s.sk << 10) | (s.d << 6) | (s.sc << 3) | s.dc)
#define UNPACK(x, s)	s.fl = (x >> 25) & 63; s.seq = (x >> 21) & 15; \
			s.ack = (x >> 17) & 15; s.wnd = (x >> 15) & 3; \
			s.sk = (x >> 10) & 31; s.d = (x >> 6) & 15; \
			s.sc = (x >> 3) & 7; s.dc = x & 7

typedef Chan {
	int m[CAP];	/* sorted, largest first; 0: empty */
	byte n;
};
Chan ch[2];

byte loss = LOSS, dups = DUPS, early = EARLY;
int pk;		/* a packed segment on its way into a bag */

/* What the properties look at. */
byte st[2];		/* connection state, node 0 client, 1 server */
bool done[2];		/* the application finished and the connection is freed */
byte err[2];		/* error the application saw */
bool finout[2];		/* a FIN sent and not yet acknowledged */
byte got;		/* bytes the server application read */
bool eof;		/* the server application read end of stream */

/* rto_at armed: handshake, or data/FIN in flight (output.c, rto.c). */
#define rto_armed()	(lcid != 0 && (st[me] == SYN_SENT || st[me] == SYN_RCVD || \
			 (bufs && st[me] != CLOSED && una != nxt)))

/* Our FIN may still be (re)sent: it is not acknowledged yet. */
#define FINOUT	(fins && una != nxt && st[me] != CLOSED)

#define CANSEND(s)	((s) == ESTAB || (s) == CLOSE_WAIT || (s) == FIN_WAIT_1 || \
			 (s) == CLOSING || (s) == LAST_ACK)

/* Insert pk into bag c, keeping it sorted. */
inline bag_insert(c)
{
	j = ch[c].n;
	do
	:: j > 0 && ch[c].m[j - 1] < pk -> ch[c].m[j] = ch[c].m[j - 1]; j--
	:: else -> break
	od;
	ch[c].m[j] = pk;
	ch[c].n++;
	j = 0
}

/* Send "out" to the peer; the channel may drop or duplicate it. */
inline put()
{
	printf("MSC: %d sends fl=%d seq=%d ack=%d wnd=%d sk=%d d=%d sc=%d dc=%d (st %d)\n",
	       me, out.fl, out.seq, out.ack, out.wnd, out.sk, out.d, out.sc, out.dc, st[me]);
	pk = PACK(out);
	if
	:: ch[me].n == CAP -> printf("MSC: bag full, dropped\n")	/* a full queue drops */
	:: ch[me].n < CAP && loss > 0 -> loss--; printf("MSC: lost\n")
	:: ch[me].n + 1 < CAP && dups > 0 -> dups--; printf("MSC: duplicated\n");
		bag_insert(me); bag_insert(me)
	:: ch[me].n < CAP -> bag_insert(me)
	fi;
	pk = 0;
	out.fl = 0; out.seq = 0; out.ack = 0; out.wnd = 0; out.sk = 0; out.d = 0;
	out.sc = 0; out.dc = 0
}

/* An RST: ids, seq, ack. */
inline put_rst(scv, dcv, sq, ak)
{
	out.fl = F_RST | F_ACK; out.sc = scv; out.dc = dcv; out.seq = sq; out.ack = ak;
	out.sk = NOSACK;
	put()
}

/* Take any segment from the peer's bag (reordering) into "in". */
inline take()
{
	/* equal segments are one choice */
	if
	:: i = 0
	:: ch[1 - me].n > 1 && ch[1 - me].m[1] != ch[1 - me].m[0] -> i = 1
	:: ch[1 - me].n > 2 && ch[1 - me].m[2] != ch[1 - me].m[1] -> i = 2
	:: ch[1 - me].n > 3 && ch[1 - me].m[3] != ch[1 - me].m[2] -> i = 3
	:: ch[1 - me].n > 4 && ch[1 - me].m[4] != ch[1 - me].m[3] -> i = 4
	:: ch[1 - me].n > 5 && ch[1 - me].m[5] != ch[1 - me].m[4] -> i = 5
	fi;
	UNPACK(ch[1 - me].m[i], in);
	assert(in.fl != 0);
	printf("MSC: %d takes fl=%d seq=%d ack=%d wnd=%d sk=%d d=%d sc=%d dc=%d (st %d)\n",
	       me, in.fl, in.seq, in.ack, in.wnd, in.sk, in.d, in.sc, in.dc, st[me]);
	/* the rest moves up */
	do
	:: i + 1 < ch[1 - me].n -> ch[1 - me].m[i] = ch[1 - me].m[i + 1]; i++
	:: else -> break
	od;
	ch[1 - me].n--;
	ch[1 - me].m[ch[1 - me].n] = 0;
	i = 0
}

/* input.c: a segment for no connection is answered with RST, never an RST. */
inline no_conn()
{
	if
	:: in.fl & F_RST -> skip
	:: else ->
		if
		:: (in.fl & F_SYN) && !(in.fl & F_ACK) ->
			/* on_syn without a listener: scid 0xffffffff */
			put_rst(NOCID, in.sc, 0, S(in.seq + 1))
		:: else ->
			/* sctx_send_rst(peer, h.scid, h.dcid, h.ack, h.seq + h.len) */
			if
			:: in.fl & F_DATA -> o = 1
			:: else -> o = 0
			fi;
			if
			:: in.dc != 0 -> put_rst(in.dc, in.sc, in.ack, S(in.seq + o))
			:: else -> put_rst(NOCID, in.sc, in.ack, S(in.seq + o))
			fi;
			o = 0
		fi
	fi
}

/* A segment's offset in this node's sequence space. */
#define OFF(x)	D(x, S(iss + 1))
#define BIT(x)	(1 << (x))

/* stream_xmit (output.c): header from the connection; the run sends it.
 * Every segment after the SYN carries ack, window and SACK. */
inline xmit(f, sq, dv)
{
	out.fl = f; out.seq = sq; out.d = dv; out.sc = lcid; out.dc = pcid; out.sk = NOSACK;
	if
	:: out.fl & F_SYN ->
		out.wnd = W;
		if
		:: out.fl & F_ACK -> out.ack = S(irs + 1)
		:: else
		fi
	:: else ->
		out.fl = out.fl | F_ACK;
		if
		:: bufs ->
			out.ack = S(rnxt + reof);
			out.wnd = W - reof;
			if
			:: ooo -> out.sk = S(rnxt + 1)
			:: else
			fi
		:: else -> out.ack = S(irs + 1)
		fi
	fi;
	put();
	acknow = 0; delayed = 0; delack = 0
}

/* stream_output (output.c): repairs, then new data and FIN, then the ACK. */
inline output()
{
	oq = 0;
	if
	:: st[me] == SYN_SENT || st[me] == SYN_RCVD || st[me] == CLOSED ||
	   st[me] == LISTEN || !bufs -> skip
	:: else ->
		if
		:: CANSEND(st[me]) ->
			/* 1. repair: lost, not SACKed, not yet retransmitted */
			k = 0;
			do
			:: k < D(nxt, una) ->
				o = OFF(S(una + k));
#ifndef MUTANT_NORETX
				if
				:: (lostm & BIT(o)) && !(sackm & BIT(o)) && !(retxm & BIT(o)) ->
					if
					:: o == nb -> xmit(F_FIN, S(una + k), 0)
					:: else -> xmit(F_DATA, S(una + k), BYTE(me, o))
					fi;
					retxm = retxm | BIT(o)
				:: else
				fi;
#endif
				k++
			:: else -> break
			od;
			/* 2. new data within the peer's window; FIN after it */
			do
			:: fins -> break
			:: !fins && (!sent || OFF(nxt) == nb) ->
				if
				:: finq ->
					xmit(F_FIN, nxt, 0);
					nxt = S(nxt + 1); fins = 1
				:: else
				fi;
				break
			:: !fins && sent && OFF(nxt) < nb && !GT(wr, nxt) -> break
			:: !fins && sent && OFF(nxt) < nb && GT(wr, nxt) ->
				/* PRB on the last segment before waiting for an ACK */
				if
				:: OFF(nxt) + 1 == nb || D(wr, nxt) == 1 ->
					xmit(F_DATA | F_PRB, nxt, BYTE(me, OFF(nxt)))
				:: else -> xmit(F_DATA, nxt, BYTE(me, OFF(nxt)))
				fi;
				nxt = S(nxt + 1)
			od
		:: else
		fi;
		if
		:: acknow -> xmit(0, nxt, 0)
		:: else
		fi
	fi;
	k = 0; o = 0
}

/* stream_on_rto (rto.c): repeat SYN or SYN|ACK; else all unSACKed lost. */
inline on_rto()
{
	if
	:: st[me] == SYN_SENT -> xmit(F_SYN, iss, 0)
	:: st[me] == SYN_RCVD -> xmit(F_SYN | F_ACK, iss, 0)
	:: else ->
		k = 0;
		do
		:: k < D(nxt, una) ->
			o = OFF(S(una + k));
			if
			:: !(sackm & BIT(o)) ->
				lostm = lostm | BIT(o); retxm = retxm & ~BIT(o)
			:: else
			fi;
			k++
		:: else -> break
		od;
		oq = 1
	fi
}

/* rto_at due (timers.c run_timers -> stream_on_rto, then the run) */
inline rto_step()
{
	printf("MSC: %d rto (st %d)\n", me, st[me]);
	on_rto();
	if
	:: oq -> output()
	:: else
	fi;
	finout[me] = FINOUT;
	k = 0; o = 0
}

/* stream_fail (state.c) with error e: CLOSED; freed if nobody holds it
 * (an orphan, or a child the application has not accepted). */
inline fail(ev)
{
	err[me] = ev;
	st[me] = CLOSED;
	acknow = 0; delack = 0; oq = 0; finout[me] = 0;
	if
	:: orphan || (me == 1 && !accepted) ->
		lcid = 0;
		if
		:: orphan && !lst -> goto finished
		:: else
		fi
	:: else
	fi
}

/* stream_rst_error (state.c) into e */
inline rst_error()
{
	if
	:: st[me] == SYN_RCVD -> e = E_REFUSED
	:: st[me] == TIME_WAIT -> e = 0
	:: st[me] == CLOSING || st[me] == LAST_ACK ->
		if
		:: fins && S(una + 1) == nxt -> e = 0
		:: else -> e = E_RESET
		fi
	:: else -> e = E_RESET
	fi
}

/* on_syn (input.c): a SYN to the listener. */
inline on_syn()
{
	if
	:: !lst -> put_rst(NOCID, in.sc, 0, S(in.seq + 1))
	:: else ->
		if
		:: lcid != 0 && st[me] != LISTEN && st[me] != CLOSED && pcid == in.sc &&
		   irs == in.seq ->
			/* a copy of the SYN of the connection we have */
			if
			:: st[me] == SYN_RCVD -> xmit(F_SYN | F_ACK, iss, 0)
			:: else -> acknow = 1; oq = 1
			fi
		:: else ->
			/* a new half-open child (it replaces a freed one) */
			gen++; assert(gen < 4);
			lcid = gen; pcid = in.sc; irs = in.seq; iss = ISS_S;
			una = iss; nxt = S(iss + 1);
			st[me] = SYN_RCVD;
			xmit(F_SYN | F_ACK, iss, 0)
		fi
	fi
}

/* stream_established (state.c) */
inline established(rwnd)
{
	una = S(iss + 1); nxt = una; wr = S(iss + 1 + rwnd);
	rnxt = S(irs + 1); bufs = 1;
	st[me] = ESTAB; prog = 1
}

/* xvi_sctx__input (input.c) */
inline input()
{
	if
	:: (in.fl & F_SYN) && !(in.fl & F_ACK) -> on_syn()
	:: else ->
		if
		:: lcid == 0 || in.dc != lcid || st[me] == LISTEN || st[me] == CLOSED ||
		   (st[me] != SYN_SENT && in.sc != pcid) ->
			no_conn()
		:: else ->
			if
			:: st[me] == SYN_SENT -> syn_sent_input()
			:: else -> conn_input()
			fi
		fi
	fi
}

/* input.c, SYN_SENT: only what acknowledges our SYN counts */
inline syn_sent_input()
{
	if
	:: in.ack != S(iss + 1) -> skip
	:: else ->
		if
		:: in.fl & F_RST -> fail(E_REFUSED)
		:: else ->
			if
			:: !(in.fl & F_SYN) -> skip
			:: else ->
				pcid = in.sc; irs = in.seq;
				established(in.wnd);
				acknow = 1; oq = 1
			fi
		fi
	fi
}

/* input.c, a synchronized (or SYN_RCVD) connection */
inline conn_input()
{
	if
	:: in.fl & F_RST -> rst_error(); fail(e)
	:: else ->
		if
		:: in.fl & F_SYN -> acknow = 1; oq = 1	/* our ACK of the SYN|ACK was lost */
		:: else ->
			if
			:: st[me] == SYN_RCVD && in.ack != S(iss + 1) -> skip
			:: else ->
				if
				:: st[me] == SYN_RCVD -> established(in.wnd)
				:: else
				fi;
				on_ack();
				on_data();
				update_state()
			fi
		fi
	fi
}

/* stream_on_ack (ack.c): window, snd.una, SACK, RACK (a choice). */
inline on_ack()
{
	if
	:: GT(in.ack, nxt) || LT(in.ack, una) -> skip	/* ack_acceptable */
	:: else ->
		if
		:: GT(S(in.ack + in.wnd), wr) || GT(in.ack, una) -> wr = S(in.ack + in.wnd)
		:: else
		fi;
		if
		:: GT(in.ack, una) ->
			/* advance_una: free the records it covers */
			k = OFF(in.ack);
			sackm = sackm & ~(BIT(k) - 1);
			lostm = lostm & ~(BIT(k) - 1);
			retxm = retxm & ~(BIT(k) - 1);
			una = in.ack; oq = 1; prog = 1;
			o = k	/* RACK: what was sent below o may be lost */
		:: else -> o = 0
		fi;
		/* mark_sacked: one block of one data byte */
		if
		:: in.sk != NOSACK && GT(S(in.sk + 1), una) && LE(S(in.sk + 1), nxt) &&
		   !(sackm & BIT(OFF(in.sk))) ->
			sackm = sackm | BIT(OFF(in.sk)); oq = 1;
			if
			:: OFF(in.sk) > o -> o = OFF(in.sk)
			:: else
			fi
		:: else
		fi;
		/* stream_rack_detect: each unSACKed segment below the delivered
		 * one, not already waiting for repair, is lost now or later */
		k = OFF(una);
		do
		:: k < o ->
			if
			:: !(sackm & BIT(k)) && !((lostm & BIT(k)) && !(retxm & BIT(k))) ->
				if
				:: lostm = lostm | BIT(k); retxm = retxm & ~BIT(k); oq = 1
				:: skip
				fi
			:: else
			fi;
			k++
		:: else -> break
		od;
		k = 0; o = 0
	fi
}

/* on_data (input.c) with xvi_srq__insert (buf.c); the application reads
 * in-order bytes at once (the delivered stream is checked here). */
inline on_data()
{
	if
	:: in.fl & F_DATA ->
		if
		:: reof -> acknow = 1					/* dup */
		:: !reof && LT(in.seq, rnxt) -> acknow = 1		/* dup */
		:: !reof && GE(in.seq, S(rnxt + W)) -> acknow = 1	/* beyond the window */
		:: !reof && in.seq == S(rnxt + 1) && ooo -> acknow = 1	/* held: dup */
		:: !reof && in.seq == S(rnxt + 1) && !ooo ->		/* a hole: SACK now */
			ooo = 1; ood = in.d; acknow = 1
		:: !reof && in.seq == rnxt ->
			/* in order: the application reads it */
			assert(me == 1 && got < NBYTES && in.d == BYTE(0, got));
			got++; rnxt = S(rnxt + 1); prog = 1;
			if
			:: ooo ->
				assert(got < NBYTES && ood == BYTE(0, got));
				got++; rnxt = S(rnxt + 1); ooo = 0; ood = 0;
				acknow = 1			/* filled a hole */
			:: else ->
				delayed++;
				if
				:: delayed >= W -> acknow = 1	/* ack_thr: t <= w */
				:: else -> delack = 1
				fi
			fi
		fi
	:: else
	fi;
	if
	:: in.fl & F_FIN ->
		finseq = in.seq;
		if
		:: in.fl & F_DATA -> finseq = S(finseq + 1)
		:: else
		fi;
		fink = 1; acknow = 1
	:: else
	fi;
	if
	:: fink && !reof && rnxt == finseq ->
		reof = 1; acknow = 1;
		if
		:: me == 1 -> assert(got == NBYTES); eof = 1
		:: else
		fi
	:: else
	fi;
	if
	:: in.fl & F_PRB -> acknow = 1	/* held ACKs (interactive) left out */
	:: else
	fi;
	if
	:: acknow -> oq = 1
	:: else
	fi
}

/* stream_update_state (state.c) */
inline update_state()
{
	if
	:: st[me] == ESTAB && reof -> st[me] = CLOSE_WAIT
	:: st[me] == FIN_WAIT_1 && fins && una == nxt && reof -> st[me] = TIME_WAIT
	:: st[me] == FIN_WAIT_1 && fins && una == nxt && !reof -> st[me] = FIN_WAIT_2
	:: st[me] == FIN_WAIT_1 && !(fins && una == nxt) && reof -> st[me] = CLOSING
	:: st[me] == FIN_WAIT_2 && reof -> st[me] = TIME_WAIT
	:: st[me] == CLOSING && fins && una == nxt -> st[me] = TIME_WAIT
	:: st[me] == LAST_ACK && fins && una == nxt -> fail(0)
	:: else
	fi
}

/*
 * One node: the engine of one context (libxvi/stream) with one connection
 * (and, on the server, its listener), driven by its application.
 * Offsets: o = seq - (iss + 1), 0 .. nb - 1 data, nb the FIN.
 */
proctype Node(byte me)
{
	Seg in, out;
	byte i, j, k, o;
	byte nb;		/* bytes this node's application sends */
	/* the connection (struct xvi_stream) */
	byte lcid, pcid;	/* id.local_cid, id.peer_cid (0: none) */
	byte gen;		/* server: ids given to children so far */
	bool lst;		/* server: the listener is open */
	bool bufs;		/* flight.segs: buffers allocated (established once) */
	bool orphan, accepted, sent, closed, aborted, half;
	byte iss, irs, una, nxt, wr;
	bool finq, fins;
	byte sackm, lostm, retxm;	/* flight records: SEG_SACKED/LOST/RETX by offset */
	byte rnxt;		/* rcv.queue.nxt */
	bool ooo;		/* rcv.queue holds the byte at rnxt + 1 (W = 2) */
	byte ood;
	bool fink, reof;
	byte finseq;
	bool acknow, delack;
	byte delayed;
	bool oq;		/* on_output: stream_output() runs after this event */
	bool prog;		/* this step made progress (non-progress cycles) */
	byte e;

	atomic {
	if
	:: me == 0 -> nb = NBYTES
	:: else
	fi;
	if
	:: me == 0 ->
		/* xvi_ss__connect: SYN_SENT, SYN out (rto armed) */
		lcid = 1; iss = ISS_C; una = iss; nxt = S(iss + 1);
		st[me] = SYN_SENT;
		xmit(F_SYN, iss, 0)
	:: else ->
		/* xvi_ss__listen */
		lst = 1; st[me] = LISTEN
	fi
	}

	do
	/* ---- a segment in: xvi_sctx__input (input.c) ---- */
	:: atomic {
		ch[1 - me].n > 0 ->
		take();
		input();
		if
		:: oq -> output()
		:: else
		fi;
		finout[me] = FINOUT;
		in.fl = 0; in.seq = 0; in.ack = 0; in.wnd = 0; in.sk = 0; in.d = 0;
		in.sc = 0; in.dc = 0; i = 0; k = 0; o = 0; e = 0
	   }
	/* ---- timers (timers.c run_timers) ---- */
	:: atomic { timeout && rto_armed() -> rto_step() }
	:: atomic { early > 0 && rto_armed() -> early--; rto_step() }
	:: atomic {
		delack && lcid != 0 ->
		/* delack_at due: the ACK goes */
		delack = 0; acknow = 1; oq = 1;
		output()
	   }
	:: atomic {
		timeout && st[me] == TIME_WAIT && !finout[1 - me] ->
		/* close_at due in TIME_WAIT: stream_fail(s, 0) */
		fail(0)
	   }
	:: atomic {
		timeout && orphan && lcid != 0 && st[me] != TIME_WAIT && !rto_armed() ->
		/* close_at due for an orphan (timers.c): linger over, the peer
		 * did not finish: RST, freed.  An orphan's RTO is capped at
		 * linger / 8 (rto.c), so linger outlasts its retransmissions
		 * (the model's faults are bounded): it ends only an orphan
		 * with nothing left to send, waiting for a silent peer. */
		printf("MSC: %d linger over (st %d)\n", me, st[me]);
		if
		:: pcid != 0 && st[me] != CLOSED -> put_rst(lcid, pcid, nxt, S(rnxt + reof))
		:: else
		fi;
		st[me] = CLOSED; lcid = 0; finout[me] = 0;
		if
		:: !lst -> goto finished
		:: else
		fi
	   }
	/* ---- the application (ops.c) ---- */
	:: atomic {
		me == 0 && !sent && CANSEND(st[me]) && !finq ->
		/* xvi_ss__send of all nb bytes, then the run */
		sent = 1; oq = 1; output(); finout[me] = FINOUT
	   }
	:: atomic {
		me == 1 && lst && bufs ->
		/* xvi_ss__accept, then the listener closed (xvi_ss__abort on
		 * a listener with empty queues sends nothing) */
		accepted = 1; lst = 0;
		if
		:: lcid == 0 -> goto finished
		:: else
		fi
	   }
#ifdef HALFCLOSE
	:: atomic {
		me == 1 && !half && !closed && st[me] == ESTAB && accepted ->
		/* xvi_ss__shutdown(SHUT_WR) */
		half = 1; finq = 1; st[me] = FIN_WAIT_1; oq = 1;
		output(); finout[me] = FINOUT
	   }
#endif
	:: atomic {
		!closed && (me == 0 && sent || me == 1 && accepted && (reof || st[me] == CLOSED)) ->
		/* xvi_ss__close */
		closed = 1;
		if
		:: st[me] == CLOSED -> lcid = 0
		:: st[me] == TIME_WAIT -> orphan = 1
		:: else ->
			orphan = 1;
			if
			:: !finq ->
				finq = 1;
				if
				:: st[me] == ESTAB -> st[me] = FIN_WAIT_1
				:: st[me] == CLOSE_WAIT -> st[me] = LAST_ACK
				:: else
				fi
			:: else
			fi;
			oq = 1; output(); finout[me] = FINOUT
		fi;
		if
		:: lcid == 0 && !lst -> goto finished
		:: else
		fi
	   }
#ifdef ABORT
	:: atomic {
		!aborted && !closed && (lcid != 0 || lst) ->
		/* xvi_ss__abort (also: linger, user timeout, keepalive) */
		aborted = 1; closed = 1;
		if
		:: lcid != 0 && pcid != 0 && st[me] != CLOSED && st[me] != TIME_WAIT &&
		   st[me] != LISTEN ->
			put_rst(lcid, pcid, nxt, S(rnxt + reof))
		:: else
		fi;
		if
		:: lcid != 0 && st[me] != CLOSED -> st[me] = CLOSED
		:: else
		fi;
		lcid = 0; lst = 0; finout[me] = 0;
		goto finished
	   }
#endif
	:: prog -> progress: prog = 0
	od;

finished:
	/* The application is done and the connection freed: the context
	 * answers what still arrives with RST (input.c, no connection). */
	atomic {
		done[me] = 1;
		if
		:: st[me] != CLOSED -> st[me] = CLOSED
		:: else
		fi;
#ifndef ABORT
		assert(err[me] == 0);
		assert(me == 0 || (eof && got == NBYTES));
#endif
		/* canonical state: forget the connection */
		lcid = 0; pcid = 0; gen = 0; bufs = 0; orphan = 0; accepted = 0; sent = 0;
		closed = 0; aborted = 0; half = 0; iss = 0; irs = 0; una = 0; nxt = 0; wr = 0;
		finq = 0; fins = 0; sackm = 0; lostm = 0; retxm = 0; rnxt = 0; ooo = 0; ood = 0;
		fink = 0; reof = 0; finseq = 0; acknow = 0; delack = 0; delayed = 0; oq = 0;
		prog = 0; finout[me] = 0
	}
end:
	do
	:: atomic {
		ch[1 - me].n > 0 ->
		take();
		no_conn();
		in.fl = 0; in.seq = 0; in.ack = 0; in.wnd = 0; in.sk = 0; in.d = 0;
		in.sc = 0; in.dc = 0; i = 0
	   }
	od
}

init {
	atomic {
		run Node(0);
		run Node(1)
	}
}

/* Close and abort always end: both applications finish, connections freed. */
ltl terminates { <> (done[0] && done[1]) }
