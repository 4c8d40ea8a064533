#!/usr/bin/env python3
# A keyring file whose one record has N hashed attributes with distinct names:
#
#     fuzz/crashes/keyring-file-quadratic-hashed-attributes.py N > FILE
#
# KeyringFile(parsing:) (Sources/FileKeyring/KeyringFormat.swift, parseBody) checked each hashed
# attribute's name against all those before it (`hashed.contains { $0.name == name }`): N²/2
# string comparisons. In the fuzz build (fuzz/run: -O, AddressSanitizer, coverage), which parses
# the file twice: N = 2,000 (17 KB) 0.7 s, 8,000 (87 KB) 12 s, 32,000 (373 KB) 144 s. A file could
# then have 256 MiB: about 20 million names, so a read of a hostile keyring file would have run
# for days. keyring-file-8000-hashed-attributes.keyring is this script's output
# for N = 8000: `fuzz/.build/bin/FuzzKeyringFile -timeout=10 FILE` reported it as a timeout.
# (The fuzzer cannot reach it itself: its inputs are at most 4 KB, a few hundred names.)
#
# Fixed: at most 1,000 attributes per record (counted before decoding) and a Set of the names
# seen; KeyringCapTests turns the 8,000-name file into a unit test (tooLarge).
import struct
import sys


def offset_width(body_length, count):
    """gvs_calculate_total_size: the framing offsets' width."""
    for width in (1, 2, 4):
        if body_length + width * count <= (1 << (8 * width)) - 1:
            return width
    return 8


def tuple_of(members):
    """A tuple in GVariant normal form; members are (bytes, alignment, fixed-size)."""
    body, ends = bytearray(), []
    for index, (data, alignment, fixed) in enumerate(members):
        body += bytes(-len(body) % alignment)
        body += data
        if not fixed and index != len(members) - 1:
            ends.append(len(body))
    width = offset_width(len(body), len(ends))
    return bytes(body) + b"".join(end.to_bytes(width, "little") for end in reversed(ends))


def array_of(elements):
    """An array of variable-size elements of alignment 1, in GVariant normal form."""
    if not elements:
        return b""
    body, ends = bytearray(), []
    for element in elements:
        body += element
        ends.append(len(body))
    width = offset_width(len(body), len(ends))
    return bytes(body) + b"".join(end.to_bytes(width, "little") for end in ends)


count = int(sys.argv[1])
# {say}: a name and an (empty) MAC.
entries = [tuple_of([(b"a%d\0" % index, 1, False), (b"", 1, False)]) for index in range(count)]
# (a{say}ay): the hashed attributes and a blob (never decrypted: parsing is what takes the time).
record = tuple_of([(array_of(entries), 1, False), (bytes(64), 1, False)])
# (uayutua(a{say}ay)): salt size, salt, iterations, modified, usage count, records.
body = tuple_of([
    (struct.pack("<I", 32), 4, True), (b"\1" * 32, 1, False), (struct.pack("<I", 1), 4, True),
    (struct.pack("<Q", 0), 8, True), (struct.pack("<I", 0), 4, True), (array_of([record]), 1, False),
])
sys.stdout.buffer.write(b"GnomeKeyring\n\r\0\n\x01\x00" + body)
