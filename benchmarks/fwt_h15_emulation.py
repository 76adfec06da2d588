"""CPU emulation of the float16 2**15 kernel `fwht_rows_h15` (ozgemm/fwt/fwht.cu), written in
session 13 by an independent reviewer: 512 threads with r[64] each, mma_h16 modelled from the
m16n8k16 A/B/D fragment layouts, the three layouts and both address swaps as in the kernel.
Checks the output against the Sylvester WHT of random integer rows and single spikes, that every
exchange access pattern is a bijection of 16-byte pieces, that each thread writes L2 back to its
own read locations, and that every 8-lane 16-byte phase is bank-conflict-free. The index
formulas are copied from the kernel by hand: update both together.

    python3 benchmarks/fwt_h15_emulation.py
"""
import numpy as np
LT=15; N=1<<LT
def sylvester(x):
    x=x.astype(np.int64).copy(); h=1
    while h<len(x):
        x=x.reshape(-1,2,h); x=np.stack([x[:,0]+x[:,1],x[:,0]-x[:,1]],1).reshape(-1); h*=2
    return x
def hpm1(k,n): return -1 if bin(k&n).count('1')&1 else 1
def mma_h16(u, lanes_vals):
    # lanes_vals: array [32][8] of the warp's u vectors (halves as ints); returns [32][8]
    A=np.zeros((16,16),np.int64)
    for lane in range(32):
        gq,tq=lane>>2,lane&3
        a=lanes_vals[lane]
        A[gq,2*tq]=a[0];A[gq,2*tq+1]=a[1];A[gq+8,2*tq]=a[2];A[gq+8,2*tq+1]=a[3]
        A[gq,2*tq+8]=a[4];A[gq,2*tq+9]=a[5];A[gq+8,2*tq+8]=a[6];A[gq+8,2*tq+9]=a[7]
    out=np.zeros((32,8),np.int64)
    for half in range(2):
        B=np.zeros((16,8),np.int64)
        # B fragment as built: lane holds b0,b1: k=2tq+{0,1}, n=gq ; b2,b3: k=2tq+8+{0,1}, n=gq
        for lane in range(32):
            gq,tq=lane>>2,lane&3
            nn=gq+8*half
            for kk in (2*tq,2*tq+1,2*tq+8,2*tq+9): B[kk,gq]=hpm1(kk,nn)
        D=A@B
        for lane in range(32):
            gq,tq=lane>>2,lane&3
            out[lane,4*half+0]=D[gq,2*tq];out[lane,4*half+1]=D[gq,2*tq+1]
            out[lane,4*half+2]=D[gq+8,2*tq];out[lane,4*half+3]=D[gq+8,2*tq+1]
    return out
def reg_stage(r,h):
    for i in range(64):
        if i&h==0:
            u,w=r[i],r[i+h]; r[i]=u+w; r[i+h]=u-w
NT=512
phases={}  # record accesses: list of (phase_name, warp, instr_idx, lane, float_offset, nfloats)
acc=[]
def rec(ph,tid,instr,off,n=4): acc.append((ph,tid>>5,instr,tid&31,off,n))
def run(x, stage_check=True):
    acc.clear(); stage=x.copy()
    sm=np.full(N, 10**18, np.int64)  # float exchange buffer (sentinel)
    R=[None]*NT
    # load + mma + L1 stages
    U={}
    for tid in range(NT):
        lane,wid=tid&31,tid>>5
        o1=(lane<<3)|(wid<<11)
        U[tid]=[stage[o1+(c<<8):o1+(c<<8)+8] for c in range(8)]
    for tid in range(NT): R[tid]=np.zeros(64,np.int64)
    for wid in range(16):
        for c in range(8):
            lv=np.array([U[wid*32+l][c] for l in range(32)])
            out=mma_h16(None,lv)
            for l in range(32): R[wid*32+l][8*c:8*c+8]=out[l]
    for tid in range(NT):
        for h in (2,8,16,32): reg_stage(R[tid],h)
    # exchange 1 store
    for tid in range(NT):
        lane,wid=tid&31,tid>>5; o1=(lane<<3)|(wid<<11); sw=lane&4; r=R[tid]
        for c in range(8):
            a=(o1+(c<<8))^sw; sm[a:a+4]=r[8*c:8*c+4]; rec('x1st',tid,2*c,a)
            a=(o1+(c<<8))^sw^4; sm[a:a+4]=r[8*c+4:8*c+8]; rec('x1st',tid,2*c+1,a)
    # L2 load
    for tid in range(NT):
        lane,wid=tid&31,tid>>5
        o2=((lane&7)<<2)|((lane>>3)<<8)|((wid&1)<<10)|((wid>>1)<<12); r=R[tid]
        for j in range(16):
            a=(o2+((j&7)<<5)+((j>>3)<<11))^((j&1)<<2); r[4*j:4*j+4]=sm[a:a+4]; rec('x2ld',tid,j,a)
        for h in (4,8,16,32): reg_stage(r,h)
    for tid in range(NT):
        lane,wid=tid&31,tid>>5
        o2=((lane&7)<<2)|((lane>>3)<<8)|((wid&1)<<10)|((wid>>1)<<12); r=R[tid]
        for j in range(16):
            a=(o2+((j&7)<<5)+((j>>3)<<11))^((j&1)<<2); sm[a:a+4]=r[4*j:4*j+4]; rec('x2st',tid,j,a)
    y=np.full(N,10**18,np.int64)
    for tid in range(NT):
        lane,wid=tid&31,tid>>5; o3=(lane<<3)|(wid<<8); sw=lane&4; r=R[tid]
        for j in range(8):
            a=(o3+(j<<12))^sw; r[8*j:8*j+4]=sm[a:a+4]; rec('x3ld',tid,2*j,a)
            a=(o3+(j<<12))^sw^4; r[8*j+4:8*j+8]=sm[a:a+4]; rec('x3ld',tid,2*j+1,a)
        for h in (8,16,32): reg_stage(r,h)
        for j in range(8):
            g=o3+(j<<12); y[g:g+8]=r[8*j:8*j+8]
    return y
rng=np.random.default_rng(1)
for trial in range(3):
    x=rng.integers(-8,9,N)
    acc.clear()
    y=run(x)
    ok=np.array_equal(y,sylvester(x)); print('trial',trial,'equal',ok)
# delta inputs to make sure not vacuous
for i in (0,1,5,37,4095,N-1):
    x=np.zeros(N,np.int64);x[i]=1
    assert np.array_equal(run(x),sylvester(x))
print('deltas ok')
# bijection and bank-conflict checks
import collections
by=collections.defaultdict(list)
for ph,w,ins,lane,off,n in acc: by[ph].append(off)
for ph,offs in by.items():
    cells=sorted(o+k for o in offs for k in range(4))
    print(ph,'bijection', cells==list(range(N)), 'all 16B aligned', all(o%4==0 for o in offs))
# L2 read set == L2 write set per thread
print('x2 per-thread same locations', [a[:4]==b[:4] for a,b in zip([x for x in acc if x[0]=='x2ld'],[x for x in acc if x[0]=='x2st'])].count(False)==0)
# bank conflicts: per (phase,warp,instr) the 32 lanes in 4 phases of 8 lanes; each 16B access covers 4 banks
bad=0;tot=0
g=collections.defaultdict(dict)
for ph,w,ins,lane,off,n in acc: g[(ph,w,ins)][lane]=off
for key,d in g.items():
    for q in range(4):
        banks=[]
        for l in range(8*q,8*q+8):
            banks+= [ (d[l]+k)%32 for k in range(4)]
        tot+=1
        if len(set(banks))!=32: bad+=1
print('phases',tot,'conflicted',bad)
l=[x[1:] for x in acc if x[0]=='x2ld']; s=[x[1:] for x in acc if x[0]=='x2st']
print('x2 write-back to own read locations', l==s)
# negative controls
src=open(__file__).read()
