#!/usr/bin/env python3
"""Captures golden.txt: the responses of a running Knot DNS to the queries of
golden-queries.txt plus hand-made packets (malformed, TSIG, opcodes).

Serve the zones of this folder with knotd (3.2), default server settings
(udp-max-payload 1232), a template with zonefile-load: whole,
journal-content: none, zonefile-sync: -1, dnssec-signing: off, then run
    python3 capture_golden.py PORT
Query lines: NAME TYPE [tcp] [edns] [do] [bufsize=N] [class=C] [rd] [opcode=N].
"""
import os, socket, struct, sys
HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 15500
TYPES={'A':1,'NS':2,'CNAME':5,'SOA':6,'PTR':12,'MX':15,'TXT':16,'RP':17,'AAAA':28,'SRV':33,'NAPTR':35,'DNAME':39,'DS':43,'RRSIG':46,'NSEC':47,'DNSKEY':48,'SVCB':64,'HTTPS':65,'ANY':255,'AXFR':252,'IXFR':251,'CAA':257,'NSEC3':50,'NSEC3PARAM':51}
CLASSES={'IN':1,'CH':3,'ANY':255,'NONE':254,'HS':4,'C42':42}
def build(line):
    w=line.split()
    name,t=w[0],w[1]
    opts=w[2:]
    qt=TYPES.get(t) or int(t.replace('TYPE',''))
    cls=1; edns=None; do=False; tcp=False; flags=0; opcode=0
    for o in opts:
        if o=='tcp': tcp=True
        elif o.startswith('bufsize='): edns=int(o[8:])
        elif o=='edns': edns=1232
        elif o=='do': do=True; edns=edns or 1232
        elif o.startswith('class='): cls=CLASSES[o[6:]]
        elif o=='rd': flags|=0x0100
        elif o.startswith('opcode='): opcode=int(o[7:])
    flags|=opcode<<11
    q=struct.pack('!HHHHHH',0x4242,flags,1,0,0,1 if edns else 0)
    for l in name.rstrip('.').split('.'):
        if l: q+=bytes([len(l)])+l.encode()
    q+=b'\0'+struct.pack('!HH',qt,cls)
    if edns: q+=b'\0'+struct.pack('!HHBBHH',41,edns,0,0,0x8000 if do else 0,0)
    return q,tcp
def ask(port,q,tcp):
    if tcp:
        s=socket.create_connection(('127.0.0.1',port),timeout=2); s.sendall(struct.pack('!H',len(q))+q)
        n=struct.unpack('!H',s.recv(2))[0]; r=b''
        while len(r)<n: r+=s.recv(n-len(r))
        return r
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(1); s.sendto(q,('127.0.0.1',port))
    try: return s.recv(65535)
    except socket.timeout: return None

def _send_unused(port,q,tcp=False):
    if tcp:
        s=socket.create_connection(('127.0.0.1',port),timeout=2); s.sendall(struct.pack('!H',len(q))+q)
        n=struct.unpack('!H',s.recv(2))[0]; return s.recv(n).hex()
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(1);s.sendto(q,('127.0.0.1',port))
    try: return s.recv(999).hex()
    except: return 'DROP'
alg=b'\x0bhmac-sha256\x00'
rd=alg+struct.pack('!HIH',0,1795339696,300)+struct.pack('!H',32)+b'\x11'*32+struct.pack('!HHH',0x4242,0,0)
tsig=b'\x03foo\x00'+struct.pack('!HHIH',250,255,0,len(rd))+rd
OPT=bytes.fromhex('0000290200000000000000')
def q(flags=0, name='03777777076578616d706c6503636f6d00', qt=1, cls=1, recs=(tsig,)):
    body=bytes.fromhex(name)+struct.pack('!HH',qt,cls)
    return struct.pack('!HHHHHH',0x4242,flags,1,0,0,len(recs))+body+b''.join(recs)
EX='076578616d706c6503636f6d00'
TSIG_CASES=[('query',q(),False),('query edns',q(recs=(OPT,tsig)),False),('tsig first',q(recs=(tsig,OPT)),False),
('badvers',q(recs=(bytes.fromhex('0000290200000100000000'),tsig)),False),('iquery',q(flags=0x800),False),
('org',q(name='076578616d706c65036f726700'),False),('notify',q(flags=0x2000,name=EX,qt=6),False),
('notify org',q(flags=0x2000,name='076578616d706c65036f726700',qt=6),False),('update soa',q(flags=0x2800,name=EX,qt=6),False),
('update a',q(flags=0x2800),False),('axfr tcp',q(name=EX,qt=252),True),('ixfr',q(name=EX,qt=251),False),('ch',q(cls=3),False),('type0',q(qt=0),False),
('axfr www tcp',q(qt=252),True),('notify www',q(flags=0x2000,qt=6),False),
('bad tsig rdata',q(recs=(tsig[:-3],)),False)]


out=open(os.path.join(HERE,'golden.txt'),'w')
out.write('# Responses of Knot DNS 3.2.6 (knotd, zones in this folder, default settings:\n')
out.write('# udp-max-payload 1232) to the queries below, byte for byte (ID 0x4242).\n')
out.write('# Format: TRANSPORT QUERY-HEX RESPONSE-HEX|DROP  # description\n')
def emit(desc,q,tcp):
    r=ask(PORT,q,tcp)
    out.write('%s %s %s  # %s\n'%('tcp' if tcp else 'udp', q.hex(), r.hex() if r else 'DROP', desc))
for line in open(os.path.join(HERE,'golden-queries.txt')):
    line=line.split('#')[0].strip()
    if not line: continue
    q,tcp=build(line)
    emit(line,q,tcp)
Q='4242000000010000000000000377777707'+'6578616d706c6503636f6d0000010001'
raw=[
 ('QR set: dropped','4242800000010000000000000377777707'+'6578616d706c6503636f6d0000010001'),
 ('11 bytes: dropped','4242000000010000000000'),
 ('QDCOUNT 0: FORMERR','424200000000000000000000'),
 ('QDCOUNT 0 with EDNS DO: FORMERR with OPT','42420000000000000000000100002900100000800000 00'),
 ('QDCOUNT 2: dropped','424200000002000000000000'+Q[24:]+Q[24:]),
 ('question truncated: dropped',Q[:40]),
 ('trailing byte: FORMERR',Q+'ab'),
 ('ARCOUNT 1 without record: FORMERR','424200000001000000000001'+Q[24:]),
 ('OPT option overruns: FORMERR without OPT','424200000001000000000001'+Q[24:]+'000029020000000000000600fe00051234'),
 ('two OPTs: FORMERR','424200000001000000000002'+Q[24:]+'0000290200000000000000'*2),
 ('OPT in answer section: FORMERR','424200000001000100000000'+Q[24:]+'0000290200000000000000'),
 ('OPT owned by a.: accepted','424200000001000000000001'+Q[24:]+'01610000290200000000000000'),
 ('EDNS version 1 with DO: BADVERS','424200000001000000000001'+Q[24:]+'0000290200000180000000'),
 ('unknown EDNS option ignored','424200000001000000000001'+Q[24:]+'000029020000000000000600fe00021234'),
 ('EDNS buffer 100','424200000001000000000001'+Q[24:]+'0000290064000000000000'),
 ('IQUERY: NOTIMP','424208000001000000000000'+Q[24:]),
 ('STATUS with EDNS: NOTIMP with OPT','424210000001000000000001'+Q[24:]+'0000290200000000000000'),
 ('opcode 15: NOTIMP','424278000001000000000000'+Q[24:]),
 ('NOTIFY: NOTAUTH','424220000001000000000000076578616d706c6503636f6d0000060001'),
 ('UPDATE SOA: NOTAUTH','424228000001000000000000076578616d706c6503636f6d0000060001'),
 ('UPDATE type A: FORMERR','424228000001000000000000'+Q[24:]),
 ('AA RD AD CD set in query','424205300001000000000000'+Q[24:]),
 ('TC set in query','424202000001000000000000'+Q[24:]),
 ('qname with compression pointer: dropped','424200000001000000000000c0000001'),
 ('bad label type: dropped','4242000000010000000000004177076578616d706c6503636f6d0000010001'),
 ('upper-case qname','424200000001000000000000 03575757076578616d706c6503434f6d0000010001'),
 ('qd0, OPT in authority: FORMERR','4242000000000000000100010000290010170080e80000'),
 ('qd0, more records than bytes: dropped','4242000000000000000000750000ce0010000080000000'),
 ('qd1, more records than bytes: FORMERR','4242000000017600000000010161026e780477696c64067369676e65640474657374000001000100002904d0000080000000'),
 ('qd0, first record truncated: dropped','12340000000000010000000000000100010000000000'),
 ('qd0, one record then missing: FORMERR','123400000000000200000000000001000100000e100004c0000203'),
 ('qd0, trailing byte: dropped','123400000000000000000000ab'),
 ('qd0, opcode 8: NOTIMP','123440000000000000000000'),
 ('qd0, NOTIFY: FORMERR','123420000000000000000000'),
 ('TSIG with other fudge and original ID','42420000000100000000000203777777076578616d706c6503636f6d0000010001000029020000000000000003666f6f0000fa00ff00000000003d0b682d61632d7368613235360000006b02b5b0ca2c00201111111111111111111111111111111111111111111111111111111111111111424300000000'),
 ('upper-case qname through CNAMEs','42420000000100000000000006434e414d4532074558414d504c4503434f4d0000010001'),
 ('upper-case qname through DNAME','424200000001000000000000015905444e414d45074558414d504c4503434f4d0000010001'),
]
for desc,h in raw:
    q=bytes.fromhex(h.replace(' ',''))
    emit(desc,q,False)
    if 'dropped' not in desc and len(q)>12: emit(desc,q,True)
out.close()
# TSIG cases (no keys configured: BADKEY / NOTAUTH)
out=open(os.path.join(HERE,'golden.txt'),'a')
for name,qq,tcp in TSIG_CASES:
    r=ask(PORT,qq,tcp)
    out.write('%s %s %s  # TSIG: %s\n'%('tcp' if tcp else 'udp', qq.hex(), r.hex() if r else 'DROP', name))
out.close()
