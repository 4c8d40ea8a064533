#!/usr/bin/python3
"""miskeyed-writes.py [ROUNDS]: what a Secret Service stores and answers for a write sent through a
session whose key it does not share (PROVIDERS.md, kwallet: "writes through a mis-keyed session").

    dbus-test/run --provider kwallet --needs fake-service dbus-test/providers/kwallet.d/miskeyed-writes.py 10

(fake-service: python3-cryptography.)

Each round opens a correct dh-ietf1024-sha256-aes128-cbc-pkcs7 session (key K, the provider's),
then sends SetSecret on an item `secret-tool` stored, and CreateItem of a new item, each with a
secret encrypted under another key K' -- as when the two sides derived different keys. The IV is
drawn until the provider's decryption with K has valid PKCS#7 padding, or until it has not
(about 1 in 256 draws unpads by chance), so both outcomes are covered. Then it prints the reply,
and what the item holds, as read back through the correct session and by `secret-tool lookup` (a
client we did not write). Test tooling: never run it on a keyring that matters.
"""
import os
import subprocess
import sys
import uuid

import dbus
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PRIME = int(
    'FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD'
    'EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED'
    'EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF', 16)
BUS = 'org.freedesktop.secrets'
ITEM = 'org.freedesktop.Secret.Item'
# The content type the writes are sent with ($MISKEYED_CONTENT_TYPE, default text/plain).
CONTENT_TYPE = os.environ.get('MISKEYED_CONTENT_TYPE', 'text/plain')

bus = dbus.SessionBus()
service = dbus.Interface(bus.get_object(BUS, '/org/freedesktop/secrets'), 'org.freedesktop.Secret.Service')


def open_session():
    """A session whose key both sides share (a leading zero byte in the shared secret is avoided)."""
    while True:
        private = int.from_bytes(os.urandom(128), 'big') % (PRIME - 3) + 2
        public = pow(2, private, PRIME).to_bytes(128, 'big')
        output, path = service.OpenSession('dh-ietf1024-sha256-aes128-cbc-pkcs7', dbus.ByteArray(public),
                                           byte_arrays=True)
        shared = pow(int.from_bytes(bytes(output), 'big'), private, PRIME).to_bytes(128, 'big')
        if shared[0] == 0:
            bus.get_object(BUS, path).Close(dbus_interface='org.freedesktop.Secret.Session')
            continue
        key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b'').derive(shared)
        return path, key


def unpad(key, iv, value):
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    plain = decryptor.update(value) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(plain) + unpadder.finalize()  # ValueError when the padding is wrong


def miskeyed(session, key, secret, valid_padding):
    """(structure, what the provider decrypts it to or None): `secret` encrypted under a random
    other key, the IV drawn until the provider's decryption unpads (or does not)."""
    padder = padding.PKCS7(128).padder()
    padded = padder.update(secret) + padder.finalize()
    other = os.urandom(16)
    while True:
        iv = os.urandom(16)
        encryptor = Cipher(algorithms.AES(other), modes.CBC(iv)).encryptor()
        value = encryptor.update(padded) + encryptor.finalize()
        try:
            seen = unpad(key, iv, value)
        except ValueError:
            seen = None
        if (seen is not None) == valid_padding:
            return (dbus.Struct((dbus.ObjectPath(session), dbus.ByteArray(iv), dbus.ByteArray(value), CONTENT_TYPE),
                                signature='oayays'), seen)


def read(path, session, key):
    try:
        _, iv, value, content_type = bus.get_object(BUS, path).GetSecret(session, dbus_interface=ITEM,
                                                                           byte_arrays=True)
        return f'{unpad(key, bytes(iv), bytes(value))!r} ({content_type})'
    except dbus.DBusException as e:
        return f'error {e.get_dbus_name()}'
    except ValueError:
        return 'undecryptable'


def lookup(attributes):
    words = [w for pair in attributes.items() for w in pair]
    done = subprocess.run(['secret-tool', 'lookup', *words], capture_output=True, timeout=10)
    return f'exit {done.returncode} stdout {done.stdout!r} stderr {done.stderr.decode().strip()!r}'


def call(method):
    try:
        return 'success ' + repr(method())
    except dbus.DBusException as e:
        return f'error {e.get_dbus_name()}: {e.get_dbus_message()}'


def round_(valid_padding, session, key):
    tag = 'valid' if valid_padding else 'invalid'
    # SetSecret on an item another client stored.
    attributes = {'miskeyed': str(uuid.uuid4()), 'write': 'set'}
    subprocess.run(['secret-tool', 'store', '--label=miskeyed', *[w for p in attributes.items() for w in p]],
                   input=b'original', check=True, timeout=10)
    (path,), _ = service.SearchItems(attributes)
    structure, seen = miskeyed(session, key, b'new-secret', valid_padding)
    reply = call(lambda: bus.get_object(BUS, path).SetSecret(structure, dbus_interface=ITEM))
    print(f'SetSecret {tag} padding (provider decrypts to {seen!r}): {reply}')
    print(f'    stored: {read(path, session, key)}; secret-tool lookup: {lookup(attributes)}')
    # CreateItem of a new item.
    attributes = {'miskeyed': str(uuid.uuid4()), 'write': 'create'}
    structure, seen = miskeyed(session, key, b'new-secret', valid_padding)
    collection = bus.get_object(BUS, service.ReadAlias('default'))
    properties = {ITEM + '.Label': 'miskeyed', ITEM + '.Attributes': dbus.Dictionary(attributes, signature='ss')}
    reply = call(lambda: collection.CreateItem(properties, structure, False,
                                               dbus_interface='org.freedesktop.Secret.Collection'))
    found, locked = service.SearchItems(attributes)
    print(f'CreateItem {tag} padding (provider decrypts to {seen!r}): {reply}')
    print(f'    items found: {[str(p) for p in found + locked]}; '
          f'stored: {[read(p, session, key) for p in found]}; secret-tool lookup: {lookup(attributes)}')


rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
for n in range(rounds):
    session, key = open_session()
    round_(n % 2 == 0, session, key)
    # The session still works for a correctly keyed write afterwards?
    print(f'    session still usable: {read(service.SearchItems({"write": "set"})[0][-1], session, key)}')
