# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent Python reading of docs/protocol.md, checked against tests/vectors/*.json.

scripts/test runs it in a cached virtual environment (requirements.txt beside it). It is a
cross-check of the spec text (written without the Rust code) and a starting point for the
Python implementation; any mismatch fails an assert and the run.
Run: python3 src/core/tests/python/check_vectors.py
"""
import hashlib
import hmac
import json
import pathlib
import unicodedata
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from argon2.low_level import hash_secret_raw, Type
from spake2 import SPAKE2_A, SPAKE2_B

ROOT = pathlib.Path(__file__).resolve().parents[2]
D = str(ROOT / "tests" / "vectors") + "/"
W = str(ROOT / "wordlists") + "/"
load = lambda n: json.load(open(D + n))['cases']
H = bytes.fromhex

FOLD = {'à':'a','â':'a','ä':'a','æ':'ae','ç':'c','è':'e','é':'e','ê':'e','ë':'e','î':'i','ï':'i','ô':'o','ö':'o','ù':'u','û':'u','ü':'u','œ':'oe'}
WS = set(map(chr, [*range(9, 14), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))
def is_sep(c): return c in WS or c in '-_'
def fold(s): return ''.join(FOLD.get(c, c) for c in s)
def normalise(s):
    s = fold(unicodedata.normalize('NFKC', s).lower())
    words, cur = [], ''
    for c in s:
        if is_sep(c):
            if cur: words.append(cur); cur = ''
        else: cur += c
    if cur: words.append(cur)
    return '-'.join(words)
LISTS = {}
for lang, f in [('en', 'english.txt'), ('fr', 'french.txt')]:
    LISTS[lang] = [normalise(w) for w in open(W + f, encoding='utf-8').read().split('\n') if w]
SETS = {k: set(v) for k, v in LISTS.items()}
def parse(s):
    if len(s.encode()) > 256: return ('too-long', None)
    n = normalise(s); words = n.split('-') if n else []
    if not words: return ('empty', None)
    if len(words) != 4: return ('wrong-word-count', None)
    for i, w in enumerate(words):
        if not any(w in S for S in SETS.values()): return ('unknown-word', i + 1)
    for end in range(1, 5):
        if not any(all(w in SETS[l] for w in words[:end]) for l in ('en', 'fr')): return ('mixed-lists', end)
    return ('ok', next(l for l in ('en', 'fr') if all(w in SETS[l] for w in words)))

for c in load('normalisation.json'):
    s = H(c['input_hex']).decode()
    assert normalise(s).encode().hex() == c['normalised_hex'], c['comment']
    kind, extra = parse(s)
    if c['valid']: assert (kind, extra) == ('ok', c['language']), c['comment']
    else: assert (kind, extra) == (c['error'], c.get('position')), (c['comment'], kind, extra)
print('normalisation ok')

for c in load('argon2id.json'):
    pw = hash_secret_raw(H(c['normalised_hex']), H(c['room_id']), time_cost=c['t'], memory_cost=c['m_kib'], parallelism=c['p'], hash_len=32, type=Type.ID, version=19)
    assert pw.hex() == c['password']
print('argon2id ok')

for c in load('spake2.json'):
    a = SPAKE2_A(H(c['pw']), idA=H(c['id_a']), idB=H(c['id_b']), entropy_f=lambda n, b=c['rng_byte_a']: bytes([b]) * n)
    b = SPAKE2_B(H(c['pw']), idA=H(c['id_a']), idB=H(c['id_b']), entropy_f=lambda n, b=c['rng_byte_b']: bytes([b]) * n)
    assert a.start().hex() == c['msg_a'] and b.start().hex() == c['msg_b']
    assert a.finish(H(c['msg_b'])).hex() == c['key'] and b.finish(H(c['msg_a'])).hex() == c['key']
print('spake2 ok')

def extract(salt, ikm): return hmac.new(salt, ikm, 'sha256').digest()
def expand(prk, info, n):
    out, t, i = b'', b'', 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), 'sha256').digest(); out += t; i += 1
    return out[:n]
def schedule(ch, sh, k):
    th = hashlib.sha256(b'PGR1 transcript' + ch + sh).digest()
    prk = extract(th, k)
    sf = hmac.new(expand(prk, b'pgr1 s finished', 32), th, 'sha256').digest()
    cf = hmac.new(expand(prk, b'pgr1 c finished', 32), th + sf, 'sha256').digest()
    return th, prk, sf, cf
for c in load('key_schedule.json'):
    th, prk, sf, cf = schedule(H(c['client_hello']), H(c['server_hello']), H(c['k']))
    assert (th.hex(), prk.hex(), sf.hex(), cf.hex()) == (c['th'], c['prk'], c['sf'], c['cf'])
    assert expand(prk, b'pgr1 exporter', 32).hex() == c['exporter']
    for d, lab in [('c2s', b'pgr1 c2s traffic'), ('s2c', b'pgr1 s2c traffic')]:
        ts = expand(prk, lab, 32)
        assert ts.hex() == c['ts_' + d]
        assert expand(ts, b'pgr1 key', 32).hex() == c['key_' + d] and expand(ts, b'pgr1 iv', 12).hex() == c['iv_' + d]
        t1 = expand(ts, b'pgr1 key update', 32); t2 = expand(t1, b'pgr1 key update', 32)
        assert [t1.hex(), t2.hex()] == c['ts_%s_updates' % d]
print('key schedule ok')

TYPES = {0x01, 0x02, 0x10, 0x11, 0x20, 0x21, 0x30, 0x31, 0x40, 0x41, 0x50, 0x7F}
def nonce(iv, seq): return bytes(a ^ b for a, b in zip(iv, b'\0' * 4 + seq.to_bytes(8, 'big')))
def seal(key, iv, d, seq, t, body):
    ln = 1 + len(body) + 16
    return ln.to_bytes(2, 'big') + AESGCM(key).encrypt(nonce(iv, seq), bytes([t]) + body, b'PGR1' + bytes([d]) + ln.to_bytes(2, 'big'))
def open_(key, iv, d, seq, wire):
    if len(wire) < 2: return 'too-short'
    ln = int.from_bytes(wire[:2], 'big')
    if ln < 17: return 'too-short'
    if len(wire) != 2 + ln: return 'length-mismatch'
    try: pt = AESGCM(key).decrypt(nonce(iv, seq), wire[2:], b'PGR1' + bytes([d]) + wire[:2])
    except Exception: return 'decrypt'
    if pt[0] not in TYPES: return 'unknown-type'
    if pt[0] == 0x50 and len(pt) > 1: return 'bad-key-update'
    return (pt[0], pt[1:])
for c in load('records.json'):
    k, iv, w = H(c['key']), H(c['iv']), H(c['wire'])
    if 'error' in c: assert open_(k, iv, c['dir'], c['seq'], w) == c['error'], c['name']
    else:
        assert seal(k, iv, c['dir'], c['seq'], c['record_type'], H(c['body'])) == w, c['name']
        assert open_(k, iv, c['dir'], c['seq'], w) == (c['record_type'], H(c['body']))
print('records ok')

def fingerprint(pub):
    bits = int.from_bytes(hashlib.sha256(pub).digest()[:9], 'big') >> 6
    return ' '.join(LISTS['en'][(bits >> (11 * (5 - i))) & 0x7FF] for i in range(6))
for c in load('node_auth.json'):
    sk = Ed25519PrivateKey.from_private_bytes(H(c['seed']))
    pub = sk.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    msg = b'PGR1 node-auth' + bytes([c['role']]) + H(c['th'])
    assert pub.hex() == c['public_key'] and msg.hex() == c['signed_message']
    assert sk.sign(msg).hex() == c['signature'] and (pub + sk.sign(msg)).hex() == c['body']
    assert hashlib.sha256(pub).digest()[:16].hex() == c['node_id']
    assert fingerprint(pub) == c['fingerprint']
print('node auth ok')

for c in load('transcript.json'):
    room = H(c['room_id']); epoch = c['epoch'].to_bytes(4, 'big')
    code = normalise(c['code_typed'])
    pw = hash_secret_raw(code.encode(), room, time_cost=2, memory_cost=19456, parallelism=1, hash_len=32, type=Type.ID, version=19)
    assert pw.hex() == c['password']
    idA, idB = b'PGR1|A|' + room + epoch, b'PGR1|B|' + room + epoch
    a = SPAKE2_A(pw, idA=idA, idB=idB, entropy_f=lambda n: bytes([c['client_rng_byte']]) * n)
    b = SPAKE2_B(pw, idA=idA, idB=idB, entropy_f=lambda n: bytes([c['server_rng_byte']]) * n)
    ch = b'PGR1\x01\x01\x00\x00' + room + a.start()
    assert ch.hex() == c['client_hello']
    msg_b = b.start(); k = b.finish(ch[24:])
    sh = b'PGR1\x01\x01\x00\x00' + msg_b
    th, prk, sf, cf = schedule(ch, sh, k)
    assert (sh + sf).hex() == c['server_flight'] and cf.hex() == c['client_finished'] and th.hex() == c['th']
    assert a.finish(msg_b) == k
    assert expand(prk, b'pgr1 exporter', 32).hex() == c['exporter']
    st = {}
    for d, lab in [(1, b'pgr1 c2s traffic'), (2, b'pgr1 s2c traffic')]: st[d] = [expand(prk, lab, 32), 0]
    seeds = {'client': (c['client_node_seed'], 1), 'server': (c['server_node_seed'], 2)}
    for i, r in enumerate(c['records']):
        d = 1 if r['from'] == 'client' else 2
        ts, seq = st[d]
        key, iv = expand(ts, b'pgr1 key', 32), expand(ts, b'pgr1 iv', 12)
        body = H(r['body'])
        if i < 2:
            seed, role = seeds[r['from']]
            sk = Ed25519PrivateKey.from_private_bytes(H(seed))
            pub = sk.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            assert r['record_type'] == 1 and body == pub + sk.sign(b'PGR1 node-auth' + bytes([role]) + th)
        assert seal(key, iv, d, seq, r['record_type'], body).hex() == r['wire'], i
        st[d] = [expand(ts, b'pgr1 key update', 32), 0] if r['record_type'] == 0x50 else [ts, seq + 1]
print('transcript ok')
