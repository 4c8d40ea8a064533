#!/usr/bin/python3
"""A fake freedesktop Secret Service (org.freedesktop.secrets) for fault-injection tests.

It implements the parts of https://specifications.freedesktop.org/secret-service/latest/ that
libsecret uses, keeps its items in a JSON file, and misbehaves on purpose when a test switches a
*scenario* on through a test-only control interface (see README.md next to this file).

    service.py --state FILE [--scenario NAME [KEY=VALUE...]]

The scenario defaults to $FAKE_SECRET_SERVICE_SCENARIO (KEY=VALUE pairs after the name, separated
by spaces), else `normal`. Everything runs on one GLib main loop: no threads.
"""

import argparse
import base64
import hashlib
import itertools
import json
import os
import re
import secrets
import shlex
import signal
import sys
import time

import dbus
import dbus.lowlevel
import dbus.mainloop.glib
import dbus.service
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from gi.repository import GLib

BUS_NAME = 'org.freedesktop.secrets'
SERVICE_PATH = '/org/freedesktop/secrets'
COLLECTION_PREFIX = SERVICE_PATH + '/collection/'
ALIAS_PREFIX = SERVICE_PATH + '/aliases/'
SESSION_PREFIX = SERVICE_PATH + '/session/'
PROMPT_PREFIX = SERVICE_PATH + '/prompt/'
LOGIN = COLLECTION_PREFIX + 'login'
SESSION = COLLECTION_PREFIX + 'session'
NO_OBJECT = '/'

SERVICE_IFACE = 'org.freedesktop.Secret.Service'
COLLECTION_IFACE = 'org.freedesktop.Secret.Collection'
ITEM_IFACE = 'org.freedesktop.Secret.Item'
SESSION_IFACE = 'org.freedesktop.Secret.Session'
PROMPT_IFACE = 'org.freedesktop.Secret.Prompt'
PROPS_IFACE = 'org.freedesktop.DBus.Properties'
CONTROL_IFACE = 'org.pingstorage.FakeSecretService.Control'
CONTROL_PATH = '/org/pingstorage/FakeControl'

PLAIN = 'plain'
DH_AES = 'dh-ietf1024-sha256-aes128-cbc-pkcs7'
# RFC 2409 section 6.2, the Second Oakley Group (1024-bit MODP); the generator is 2.
DH_PRIME = int(
    'FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD'
    'EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED'
    'EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF', 16)
DH_BYTES = 128


def log(message):
    print(time.strftime('%H:%M:%S'), 'fake-secret-service:', message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

class Error(dbus.DBusException):
    """A D-Bus error with an explicit name."""

    def __init__(self, name, message):
        super().__init__(message)
        self._dbus_error_name = name


def is_locked(path):
    return Error('org.freedesktop.Secret.Error.IsLocked', f'{path} is locked')


def no_session(path):
    return Error('org.freedesktop.Secret.Error.NoSession', f'the session {path} does not exist')


def no_such_object(path):
    return Error('org.freedesktop.Secret.Error.NoSuchObject', f'no such item or collection: {path}')


def unknown_object(path):
    return Error('org.freedesktop.DBus.Error.UnknownObject', f'no object at {path}')


def not_supported(message):
    return Error('org.freedesktop.DBus.Error.NotSupported', message)


def invalid_args(message):
    return Error('org.freedesktop.DBus.Error.InvalidArgs', message)


# ---------------------------------------------------------------------------------------------
# Scenarios: the name, and its parameters with their defaults (all strings, as given on the CLI)
# ---------------------------------------------------------------------------------------------

SCENARIOS = {
    'normal': {},
    'locked-prompt-completes': {'delay': '0.1'},
    'locked-prompt-dismissed': {'delay': '0.1'},
    'prompt-never-completes': {},
    'prompt-wrong-type': {'delay': '0.1'},
    'prompt-then-exit': {'delay': '0.2'},
    'slow': {'delay': '30', 'method': '*'},
    'exit-mid-call': {'method': 'GetSecret,GetSecrets,SetSecret,CreateItem,Delete', 'when': 'before'},
    'plain-only': {},
    'no-default-alias': {},
    'default-alias-missed': {'times': '1'},
    'no-default-collection': {'prompt': 'complete', 'delay': '0.1'},
    'duplicates': {'order': 'path'},
    'no-session-after-restart': {},
    'kwallet-locked': {'prompt': 'none', 'delay': '0.1'},
    'refuses-provider-attributes': {},
    'garbled-secret': {'times': '1'},
    'stripped-shared-secret': {'times': '1'},
    'miskeyed-session': {'times': '1', 'writes': 'padding'},
}
# What Prompt() does in the scenarios that lock `login`.
PROMPT_OUTCOMES = {
    'locked-prompt-completes': 'complete',
    'locked-prompt-dismissed': 'dismiss',
    'prompt-never-completes': 'never',
    'prompt-wrong-type': 'wrong-type',
    'prompt-then-exit': 'exit',
}


class Scenario:
    def __init__(self, name, params=None):
        if name not in SCENARIOS:
            raise invalid_args(f'unknown scenario {name!r} (have: {", ".join(SCENARIOS)})')
        unknown = set(params or {}) - set(SCENARIOS[name])
        if unknown:
            raise invalid_args(f'scenario {name} has no parameter {", ".join(sorted(unknown))}')
        self.name = name
        self.params = {**SCENARIOS[name], **(params or {})}
        try:
            self.delay = float(self.params.get('delay', 0))
        except ValueError:
            raise invalid_args(f'delay must be a number of seconds, not {self.params["delay"]!r}')
        self.exit_methods = set(self.params.get('method', '').split(','))
        if self.params.get('when', 'before') not in ('before', 'after'):
            raise invalid_args('when must be before or after')
        if self.params.get('order', 'path') not in ('path', 'reverse'):
            raise invalid_args('order must be path or reverse')
        if self.params.get('writes', 'padding') not in ('padding', 'garbage', 'refused'):
            raise invalid_args('writes must be padding, garbage or refused')
        if name == 'no-default-collection':
            if self.params['prompt'] not in ('none', 'complete', 'dismiss'):
                raise invalid_args('prompt must be none, complete or dismiss')
        elif self.params.get('prompt', 'none') not in ('none', 'never', 'complete'):
            raise invalid_args('prompt must be none, never or complete')
        try:
            self.times = int(self.params.get('times', 0))
        except ValueError:
            raise invalid_args(f'times must be a whole number, not {self.params["times"]!r}')

    def prompt_outcome(self):
        """What the prompt Unlock returns leads to, or None when Unlock unlocks at once."""
        if self.name == 'kwallet-locked':
            return {'none': None, 'never': 'never', 'complete': 'complete'}[self.params['prompt']]
        return PROMPT_OUTCOMES.get(self.name)

    @property
    def locks_login(self):
        """Whether switching to this scenario locks `login`."""
        return self.name in PROMPT_OUTCOMES or self.name == 'kwallet-locked'

    @property
    def is_kwallet(self):
        return self.name == 'kwallet-locked'

    @property
    def computes_attributes(self):
        return self.name == 'refuses-provider-attributes'

    @classmethod
    def parse(cls, words):
        """`NAME KEY=VALUE...` as on the command line."""
        name, *pairs = words or ['normal']
        params = {}
        for pair in pairs:
            key, sep, value = pair.partition('=')
            if not sep:
                raise invalid_args(f'expected KEY=VALUE, not {pair!r}')
            params[key] = value
        return cls(name, params)

    def __str__(self):
        return ' '.join([self.name] + [f'{k}={v}' for k, v in sorted(self.params.items())])


# ---------------------------------------------------------------------------------------------
# Stored state: collections, aliases and items, written atomically after every change
# ---------------------------------------------------------------------------------------------

def item_sort_key(path):
    collection, _, number = path.rpartition('/')
    return collection, int(number)


class Store:
    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            self.load()
        else:
            self.reset()

    def reset(self):
        now = int(time.time())
        self.collections = {
            path: {'label': label, 'created': now, 'modified': now, 'next_id': 1}
            for path, label in ((LOGIN, 'Login'), (SESSION, 'Session'))}
        self.aliases = {'default': LOGIN, 'session': SESSION}
        self.items = {}
        self.save()

    def load(self):
        with open(self.path) as f:
            data = json.load(f)
        self.collections = data['collections']
        self.aliases = data['aliases']
        self.items = {path: {**item, 'secret': base64.b64decode(item['secret'])}
                      for path, item in data['items'].items()}

    def save(self):
        items = {path: {**item, 'secret': base64.b64encode(item['secret']).decode()}
                 for path, item in self.items.items()}
        data = {'collections': self.collections, 'aliases': self.aliases, 'items': items}
        temporary = self.path + '.tmp'
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path)

    def items_in(self, collection):
        return sorted((p for p, i in self.items.items() if i['collection'] == collection), key=item_sort_key)

    def all_items(self):
        return sorted(self.items, key=item_sort_key)

    def add_item(self, collection, label, attributes, secret, content_type, created=None, modified=None):
        record = self.collections[collection]
        path = f'{collection}/{record["next_id"]}'
        record['next_id'] += 1
        now = int(time.time())
        self.items[path] = {
            'collection': collection, 'label': label, 'attributes': dict(attributes),
            'secret': bytes(secret), 'content_type': content_type,
            'created': now if created is None else created,
            'modified': now if modified is None else modified}
        record['modified'] = now
        self.save()
        return path


# ---------------------------------------------------------------------------------------------
# Transport sessions: how secrets travel in the (oayays) struct
# ---------------------------------------------------------------------------------------------

class Session:
    """`plain` when key is None, else dh-ietf1024-sha256-aes128-cbc-pkcs7 with a 16-byte AES key.

    miskeyed (miskeyed-session): the fake uses `key`, a random key, where the client derived
    `client_key`, and `writes` says what a write it cannot decrypt properly does."""

    def __init__(self, path, client, algorithm, key=None, client_key=None, writes=None):
        self.path, self.client, self.algorithm, self.key = path, client, algorithm, key
        self.client_key, self.writes = client_key, writes

    @property
    def miskeyed(self):
        return self.client_key is not None

    def encode(self, secret, content_type):
        if self.key is None:
            parameters, value = b'', secret
        else:
            padder = padding.PKCS7(128).padder()
            padded = padder.update(secret) + padder.finalize()
            while True:
                parameters = os.urandom(16)
                encryptor = Cipher(algorithms.AES(self.key), modes.CBC(parameters)).encryptor()
                value = encryptor.update(padded) + encryptor.finalize()
                # A mis-keyed session's answer never unpads under the client's key by chance.
                if not self.miskeyed or unpad(self.client_key, parameters, value) is None:
                    break
        return dbus.Struct((dbus.ObjectPath(self.path), dbus.ByteArray(parameters), dbus.ByteArray(value),
                            dbus.String(content_type)), signature='oayays')

    def decode_miskeyed(self, parameters, value):
        """What a mis-keyed session makes of a written secret: (bytes to store, None), or (None,
        the error to answer). The bytes are garbage: the decryption under the fake's own key,
        unpadded when the padding checks out (KWallet then stores it and reports success), taken
        as it is with `writes=garbage` when it does not."""
        decrypted = unpad(self.key, bytes(parameters), bytes(value))
        writes = self.writes
        if writes == 'padding':
            writes = 'garbage' if decrypted is not None else 'refused'
        if writes == 'refused':
            return None, Error('org.freedesktop.DBus.Error.UnknownObject', f"Can't find session {self.path}")
        if decrypted is None:
            decryptor = Cipher(algorithms.AES(self.key), modes.CBC(bytes(parameters))).decryptor()
            decrypted = decryptor.update(bytes(value)) + decryptor.finalize()
        return decrypted, None

    def encode_garbled(self, secret, content_type):
        """A well-formed AES-128-CBC answer (16-byte IV, whole blocks) encrypted with another key,
        as KWallet sends when it derived a different DH key: checked to fail PKCS7 unpadding under
        this session's key, so the client cannot decrypt it (never garbage that happens to unpad).
        Encrypted sessions only."""
        padder = padding.PKCS7(128).padder()
        padded = padder.update(secret) + padder.finalize()
        while True:
            other, iv = os.urandom(16), os.urandom(16)
            encryptor = Cipher(algorithms.AES(other), modes.CBC(iv)).encryptor()
            value = encryptor.update(padded) + encryptor.finalize()
            decryptor = Cipher(algorithms.AES(self.key), modes.CBC(iv)).decryptor()
            seen = decryptor.update(value) + decryptor.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            try:
                unpadder.update(seen) + unpadder.finalize()
            except ValueError:
                break
        return dbus.Struct((dbus.ObjectPath(self.path), dbus.ByteArray(iv), dbus.ByteArray(value),
                            dbus.String(content_type)), signature='oayays')

    def encode_empty(self):
        """KWallet 5.103's answer to GetSecret on a locked item: no IV, no bytes, text/plain."""
        return dbus.Struct((dbus.ObjectPath(self.path), dbus.ByteArray(b''), dbus.ByteArray(b''),
                            dbus.String('text/plain')), signature='oayays')

    def decode(self, parameters, value):
        if self.key is None:
            return bytes(value)
        try:
            decryptor = Cipher(algorithms.AES(self.key), modes.CBC(bytes(parameters))).decryptor()
            unpadder = padding.PKCS7(128).unpadder()
            padded = decryptor.update(bytes(value)) + decryptor.finalize()
            return unpadder.update(padded) + unpadder.finalize()
        except ValueError as e:
            raise invalid_args(f'cannot decrypt the secret: {e}')


def unpad(key, iv, value):
    """The AES-128-CBC plaintext of value, unpadded, or None when the IV, the length or the padding
    is wrong."""
    try:
        decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        unpadder = padding.PKCS7(128).unpadder()
        padded = decryptor.update(value) + decryptor.finalize()
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        return None


def dh_key_exchange(client_public, stripped=False, kept=False):
    """Returns (our public key, AES key) for the client's public key (big-endian bytes).

    stripped: make the shared secret start with a zero byte (a private key is drawn until it
    does, 256 draws on average) and derive the key from it with that byte dropped, as KWallet
    does; the client cannot tell from the answer.
    kept: make the shared secret start with a non-zero byte, so that the client keeps the
    session (it closes one whose secret starts with a zero byte, 1 in 256, and opens another):
    a scenario that counts the sessions it opens a certain way then never spends one unused."""
    peer = int.from_bytes(bytes(client_public), 'big')
    if not 1 < peer < DH_PRIME - 1:
        raise invalid_args('invalid DH public key')
    while True:
        # 256-bit exponents while searching keep the draws cheap; the group is a safe prime.
        private = secrets.randbits(256) | 1 << 255 if stripped else secrets.randbelow(DH_PRIME - 3) + 2
        shared = pow(peer, private, DH_PRIME).to_bytes(DH_BYTES, 'big')
        if (shared[0] == 0) == stripped or (not stripped and not kept):
            break
    public = pow(2, private, DH_PRIME).to_bytes(DH_BYTES, 'big')
    # libsecret 0.20.5 pads the shared secret to the prime's length before HKDF.
    key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b'').derive(
        shared.lstrip(b'\0') if stripped else shared)
    return public, key


# ---------------------------------------------------------------------------------------------
# The service: state, sessions, locks, scenario, and the one place where faults are injected
# ---------------------------------------------------------------------------------------------

class Fake:
    def __init__(self, bus, store, scenario):
        self.bus, self.store = bus, store
        self.objects = {}          # every exported path under SERVICE_PATH -> its object
        self.sessions = {}         # session path -> Session
        self.watched_clients = set()
        self.locked = set()        # locked collection paths (not stored: a restart unlocks)
        self.numbers = itertools.count(1)
        self.calls = {}            # method name -> how many calls arrived (since start or reset)
        self.sessions_opened = 0   # successful OpenSession calls (since start or reset)
        self.garbled_left = 0      # garbled-secret: secrets still to answer garbled
        self.stripped_left = 0     # stripped-shared-secret: sessions still to open that way
        self.miskeyed_left = 0     # miskeyed-session: sessions still to open that way
        self.alias_missed_left = 0  # default-alias-missed: ReadAlias("default") still to answer "/"
        self.scenario = Scenario('normal')
        # A scenario from the environment waits for the harness's readiness probe (see README).
        self.pending = scenario if scenario.name != 'normal' else None
        self.objects[SERVICE_PATH] = ServiceObject(self, SERVICE_PATH)
        self.control = ControlObject(self, CONTROL_PATH)
        self.sync_objects()
        bus.add_message_filter(self.reply_unknown_object)

    # --- fault injection -------------------------------------------------------------------

    def set_scenario(self, scenario):
        self.pending = None
        self.scenario = scenario
        log(f'scenario {scenario}')
        self.garbled_left = scenario.times if scenario.name == 'garbled-secret' else 0
        self.stripped_left = scenario.times if scenario.name == 'stripped-shared-secret' else 0
        self.miskeyed_left = scenario.times if scenario.name == 'miskeyed-session' else 0
        self.alias_missed_left = scenario.times if scenario.name == 'default-alias-missed' else 0
        if scenario.name == 'normal':
            self.set_locked(set(self.store.collections), False)
        if scenario.locks_login and LOGIN in self.store.collections:
            self.set_locked({LOGIN}, True)
        if scenario.name == 'no-default-collection':
            # A freshly activated gnome-keyring: no login keyring, no default alias.
            for path in [c for c in self.store.collections if c != SESSION]:
                self.delete_collection(path)
            self.store.aliases.pop('default', None)
            self.store.save()
            self.sync_objects()
        if scenario.name == 'no-session-after-restart':
            for path in list(self.sessions):
                self.close_session(path)

    def call(self, method, obj, reply, error, work):
        """Answers one Secret Service call: runs work() (which returns the reply's arguments as
        a tuple or raises an Error) under the current scenario."""
        if self.pending and method not in ('ReadAlias', 'Get'):
            self.set_scenario(self.pending)
        scenario = self.scenario
        exits = scenario.name == 'exit-mid-call' and (method in scenario.exit_methods or
                                                      '*' in scenario.exit_methods)
        log(f'{method} on {obj.path}')
        self.count(method)
        if exits and scenario.params['when'] == 'before':
            self.exit(method)

        def answer():
            try:
                result = work()
            except dbus.DBusException as e:
                log(f'{method} on {obj.path} failed: {e.get_dbus_name()}: {e.get_dbus_message()}')
                error(e)
                return False
            if exits:
                self.exit(method)
            reply(*result)
            if self.pending and method == 'Get':
                self.set_scenario(self.pending)
            return False

        slowed = scenario.params.get('method', '*').split(',') if scenario.name == 'slow' else []
        if '*' in slowed or method in slowed:
            GLib.timeout_add(int(scenario.delay * 1000), answer)
        else:
            answer()

    def count(self, method):
        self.calls[method] = self.calls.get(method, 0) + 1

    def exit(self, method):
        # The state file is complete: every change was written (and fsynced) before its reply.
        log(f'exit-mid-call: exiting on {method} without replying')
        os._exit(1)

    # --- exported objects ------------------------------------------------------------------

    def sync_objects(self):
        """Exports an object for every collection, alias and item of the store, and removes the
        objects of those that are gone."""
        wanted = {p: (CollectionObject, None) for p in self.store.collections}
        wanted.update({ALIAS_PREFIX + a: (CollectionObject, a) for a in self.store.aliases})
        wanted.update({p: (ItemObject, None) for p in self.store.items})
        for path, obj in list(self.objects.items()):
            if isinstance(obj, (CollectionObject, ItemObject)) and path not in wanted:
                self.unexport(path)
        for path, (cls, alias) in wanted.items():
            if path not in self.objects:
                self.objects[path] = cls(self, path, alias) if alias else cls(self, path)

    def unexport(self, path):
        self.objects.pop(path).remove_from_connection()

    def reply_unknown_object(self, connection, message):
        """libdbus answers calls on paths nobody exported with UnknownMethod; the Secret Service
        answers UnknownObject, so do that for every path of ours that does not exist."""
        if (message.get_type() == dbus.lowlevel.MESSAGE_TYPE_METHOD_CALL
                and (message.get_path() or '').startswith(SERVICE_PATH + '/')
                and message.get_path() not in self.objects
                and message.get_interface() not in ('org.freedesktop.DBus.Introspectable',
                                                    'org.freedesktop.DBus.Peer')):
            log(f'{message.get_member()} on unknown object {message.get_path()}')
            self.count(message.get_member())
            connection.send_message(dbus.lowlevel.ErrorMessage(
                message, 'org.freedesktop.DBus.Error.UnknownObject', f'no object at {message.get_path()}'))
            return dbus.lowlevel.HANDLER_RESULT_HANDLED
        return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED

    def new_path(self, prefix):
        return f'{prefix}{next(self.numbers)}'

    # --- collections, aliases, locks -------------------------------------------------------

    def read_alias(self, name):
        if name == 'default' and self.scenario.name == 'no-default-alias':
            return None
        return self.store.aliases.get(name)

    def resolve(self, path):
        """The collection path behind a collection, alias or item path, or None."""
        if path.startswith(ALIAS_PREFIX):
            return self.read_alias(path[len(ALIAS_PREFIX):])
        if path in self.store.collections:
            return path
        if path in self.store.items:
            return self.store.items[path]['collection']
        return None

    def set_locked(self, collections, locked):
        """Locks or unlocks collections, announcing each change as gnome-keyring and KWallet do:
        PropertiesChanged(Locked) on the collection and its items, then CollectionChanged."""
        for path in collections:
            if (path in self.locked) != locked:
                (self.locked.add if locked else self.locked.discard)(path)
                log(f'{"locked" if locked else "unlocked"} {path}')
                self.objects[path].properties_changed(COLLECTION_IFACE, 'Locked')
                for item in self.store.items_in(path):
                    self.objects[item].properties_changed(ITEM_IFACE, 'Locked')
                self.objects[SERVICE_PATH].CollectionChanged(dbus.ObjectPath(path))

    def touch(self, collection):
        self.store.collections[collection]['modified'] = int(time.time())

    # --- sessions --------------------------------------------------------------------------

    def open_session(self, algorithm, argument, client):
        path = self.new_path(SESSION_PREFIX)
        if algorithm == PLAIN:
            session, output = Session(path, client, PLAIN), dbus.String('', variant_level=1)
        elif algorithm == DH_AES and self.scenario.name != 'plain-only':
            stripped = self.stripped_left > 0
            self.stripped_left -= stripped
            miskeyed = self.miskeyed_left > 0 and not stripped
            public, key = dh_key_exchange(argument, stripped, kept=miskeyed)
            if miskeyed:  # the client derived `key`; this side uses another
                self.miskeyed_left -= 1
                session = Session(path, client, DH_AES, os.urandom(16), client_key=key,
                                  writes=self.scenario.params['writes'])
                log(f'miskeyed-session: {path} gets a key of its own ({self.miskeyed_left} more)')
            else:
                session = Session(path, client, DH_AES, key)
            output = dbus.ByteArray(public)
        else:
            raise not_supported(f'algorithm {algorithm} is not supported')
        self.sessions[path] = session
        self.sessions_opened += 1
        self.objects[path] = SessionObject(self, path)
        if client not in self.watched_clients:  # a client's sessions end with its connection
            self.watched_clients.add(client)
            self.bus.watch_name_owner(client, lambda owner, c=client: owner or self.client_left(c))
        log(f'session {path} for {client}: {algorithm}')
        return output, dbus.ObjectPath(path)

    def client_left(self, client):
        for path, session in list(self.sessions.items()):
            if session.client == client:
                self.close_session(path)

    def close_session(self, path):
        if self.sessions.pop(path, None):
            self.unexport(path)

    def session(self, path, client):
        session = self.sessions.get(path)
        if session is None or session.client != client:
            raise no_session(path)
        return session

    # --- items -----------------------------------------------------------------------------

    def search(self, attributes, collections):
        """(unlocked, locked) item paths whose attributes include `attributes`."""
        found = [p for p in self.store.all_items()
                 if self.store.items[p]['collection'] in collections
                 and attributes.items() <= self.attributes_of(p).items()]
        if self.scenario.params.get('order') == 'reverse':
            found.reverse()
        unlocked = [p for p in found if self.store.items[p]['collection'] not in self.locked]
        locked = [p for p in found if self.store.items[p]['collection'] in self.locked]
        return unlocked, locked

    def attributes_of(self, path):
        """The attributes clients see: the stored ones, plus in refuses-provider-attributes those
        KeePassXC 2.7 shows for every entry: its fields UserName, URL, Notes (empty unless stored)
        and Title (= the label); Uuid and Path, which it computes; FDO_SECRETS_CONTENT_TYPE for
        content types other than text/plain."""
        item = self.store.items[path]
        if not self.scenario.computes_attributes:
            return dict(item['attributes'])
        attributes = {'UserName': '', 'URL': '', 'Notes': '', **item['attributes']}
        attributes['Title'] = item['label']
        attributes['Uuid'] = hashlib.md5(path.encode()).hexdigest()
        attributes['Path'] = '/' + item['label']
        if item['content_type'] != 'text/plain':
            attributes['FDO_SECRETS_CONTENT_TYPE'] = item['content_type']
        return attributes

    def secret_of(self, path, session):
        item = self.store.items[path]
        if self.garbled_left > 0 and session.key is not None:
            self.garbled_left -= 1
            log(f'garbled-secret: answering for {path} with a secret under another key '
                f'({self.garbled_left} more to garble)')
            return session.encode_garbled(item['secret'], item['content_type'])
        return session.encode(item['secret'], item['content_type'])

    def create_item(self, collection, label, attributes, secret, content_type, created=None, modified=None,
                    announce=True):
        """announce=False: KWallet's ghost of a refused CreateItem, created without ItemCreated."""
        path = self.store.add_item(collection, label, attributes, secret, content_type, created, modified)
        self.sync_objects()
        if announce:
            self.objects[collection].ItemCreated(dbus.ObjectPath(path))
            self.objects[collection].properties_changed(COLLECTION_IFACE, 'Items', 'Modified')
        return path

    def change_item(self, path, **changes):
        item = self.store.items[path]
        item.update(changes, modified=int(time.time()))
        self.touch(item['collection'])
        self.store.save()
        self.objects[path].properties_changed(ITEM_IFACE, 'Label', 'Attributes', 'Modified')
        self.objects[item['collection']].ItemChanged(dbus.ObjectPath(path))

    def delete_item(self, path):
        collection = self.store.items.pop(path)['collection']
        self.touch(collection)
        self.store.save()
        self.sync_objects()
        self.objects[collection].ItemDeleted(dbus.ObjectPath(path))
        self.objects[collection].properties_changed(COLLECTION_IFACE, 'Items', 'Modified')

    def delete_collection(self, collection):
        for path in self.store.items_in(collection):
            del self.store.items[path]
        del self.store.collections[collection]
        self.store.aliases = {a: c for a, c in self.store.aliases.items() if c != collection}
        self.locked.discard(collection)
        self.store.save()
        self.sync_objects()
        self.objects[SERVICE_PATH].CollectionDeleted(dbus.ObjectPath(collection))
        self.objects[SERVICE_PATH].properties_changed(SERVICE_IFACE, 'Collections')

    def create_collection(self, label, alias):
        """CreateCollection's work: a new collection (path from the label, as gnome-keyring does),
        given `alias` if any."""
        slug = re.sub(r'[^a-z0-9]', '_', label.lower()) or 'unnamed'
        path, n = f'{SERVICE_PATH}/collection/{slug}', 1
        while path in self.store.collections:
            n += 1
            path = f'{SERVICE_PATH}/collection/{slug}{n}'
        now = int(time.time())
        self.store.collections[path] = {'label': label, 'created': now, 'modified': now, 'next_id': 1}
        if alias:
            self.store.aliases[alias] = path
        self.store.save()
        self.sync_objects()
        log(f'created collection {path} ({label!r}, alias {alias!r})')
        self.objects[SERVICE_PATH].CollectionCreated(dbus.ObjectPath(path))
        self.objects[SERVICE_PATH].properties_changed(SERVICE_IFACE, 'Collections')
        return path

    def reset(self):
        self.store.reset()
        self.locked.clear()
        self.calls.clear()
        self.sessions_opened = 0
        self.sync_objects()
        self.set_scenario(Scenario('normal'))

    # --- control: state as JSON ------------------------------------------------------------

    def state(self):
        items = []
        for path in self.store.all_items():
            item = self.store.items[path]
            items.append({
                'path': path, 'collection': item['collection'], 'label': item['label'],
                'attributes': item['attributes'], 'secret': base64.b64encode(item['secret']).decode(),
                'content_type': item['content_type'], 'created': item['created'],
                'modified': item['modified'], 'locked': item['collection'] in self.locked})
        collections = [{'path': path, 'label': c['label'], 'created': c['created'], 'modified': c['modified'],
                        'locked': path in self.locked,
                        'aliases': sorted(a for a, target in self.store.aliases.items() if target == path)}
                       for path, c in sorted(self.store.collections.items())]
        sessions = [{'path': s.path, 'algorithm': s.algorithm, 'client': s.client, 'miskeyed': s.miskeyed}
                    for s in self.sessions.values()]
        scenario = self.pending or self.scenario
        return {'scenario': {'name': scenario.name, 'params': scenario.params,
                             'active': self.pending is None},
                'collections': collections, 'items': items, 'sessions': sessions,
                'sessions_opened': self.sessions_opened, 'garbled_left': self.garbled_left,
                'stripped_left': self.stripped_left, 'miskeyed_left': self.miskeyed_left,
                'calls': dict(sorted(self.calls.items()))}


# ---------------------------------------------------------------------------------------------
# D-Bus objects. Every Secret Service method is asynchronous (reply/error callbacks) so that
# Fake.call can delay or drop its answer.
# ---------------------------------------------------------------------------------------------

def secret_method(interface, in_signature='', out_signature=''):
    return dbus.service.method(interface, in_signature=in_signature, out_signature=out_signature,
                               sender_keyword='sender', async_callbacks=('reply', 'error'),
                               byte_arrays=True)


class SecretObject(dbus.service.Object):
    """An object of the Secret Service, with org.freedesktop.DBus.Properties.

    Subclasses define properties(): {interface: {name: value}} and set_property()."""

    def __init__(self, fake, path):
        super().__init__(fake.bus, path)
        self.fake, self.path = fake, path

    def properties(self):
        raise NotImplementedError

    def set_property(self, interface, name, value):
        raise Error('org.freedesktop.DBus.Error.PropertyReadOnly', f'{interface}.{name} is read-only')

    def properties_of(self, interface):
        values = self.properties()
        if interface not in values:
            raise invalid_args(f'{self.path} has no interface {interface}')
        return values[interface]

    @secret_method(PROPS_IFACE, 'ss', 'v')
    def Get(self, interface, name, sender, reply, error):
        def work():
            values = self.properties_of(interface)
            if name not in values:
                raise invalid_args(f'{interface} has no property {name}')
            return (values[name],)
        self.fake.call('Get', self, reply, error, work)

    @secret_method(PROPS_IFACE, 's', 'a{sv}')
    def GetAll(self, interface, sender, reply, error):
        self.fake.call('GetAll', self, reply, error,
                       lambda: (dbus.Dictionary(self.properties_of(interface), signature='sv'),))

    @secret_method(PROPS_IFACE, 'ssv')
    def Set(self, interface, name, value, sender, reply, error):
        def work():
            if name not in self.properties_of(interface):
                raise invalid_args(f'{interface} has no property {name}')
            self.set_property(interface, name, value)
            return ()
        self.fake.call('Set', self, reply, error, work)

    @dbus.service.signal(PROPS_IFACE, signature='sa{sv}as')
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def properties_changed(self, interface, *names):
        values = self.properties()[interface]
        self.PropertiesChanged(interface, dbus.Dictionary({n: values[n] for n in names}, signature='sv'),
                               dbus.Array([], signature='s'))


class ServiceObject(SecretObject):
    def properties(self):
        return {SERVICE_IFACE: {'Collections': dbus.Array(sorted(self.fake.store.collections), signature='o')}}

    @secret_method(SERVICE_IFACE, 'sv', 'vo')
    def OpenSession(self, algorithm, argument, sender, reply, error):
        self.fake.call('OpenSession', self, reply, error,
                       lambda: self.fake.open_session(algorithm, argument, sender))

    @secret_method(SERVICE_IFACE, 'a{sv}s', 'oo')
    def CreateCollection(self, properties, alias, sender, reply, error):
        def work():
            fake = self.fake
            if fake.scenario.name != 'no-default-collection':
                raise not_supported('this fake Secret Service cannot create collections')
            label = str(properties.get(COLLECTION_IFACE + '.Label', ''))
            if fake.scenario.params['prompt'] == 'none':
                return dbus.ObjectPath(fake.create_collection(label, str(alias))), dbus.ObjectPath(NO_OBJECT)
            prompt = fake.new_path(PROMPT_PREFIX)
            fake.objects[prompt] = CreationPromptObject(fake, prompt, fake.scenario.params['prompt'], [],
                                                        fake.scenario.delay, label, str(alias))
            return dbus.ObjectPath(NO_OBJECT), dbus.ObjectPath(prompt)
        self.fake.call('CreateCollection', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 'a{ss}', 'aoao')
    def SearchItems(self, attributes, sender, reply, error):
        def work():
            unlocked, locked = self.fake.search(attributes, set(self.fake.store.collections))
            return dbus.Array(unlocked, signature='o'), dbus.Array(locked, signature='o')
        self.fake.call('SearchItems', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 'ao', 'aoo')
    def Unlock(self, objects, sender, reply, error):
        def work():
            fake = self.fake
            known = [p for p in objects if fake.resolve(p)]
            locked = [p for p in known if fake.resolve(p) in fake.locked]
            unlocked = [p for p in known if p not in locked]
            prompt = NO_OBJECT
            outcome = fake.scenario.prompt_outcome()
            if locked and outcome:
                prompt = fake.new_path(PROMPT_PREFIX)
                fake.objects[prompt] = PromptObject(fake, prompt, outcome, locked, fake.scenario.delay)
            else:
                fake.set_locked({fake.resolve(p) for p in locked}, False)
                unlocked = known
            return dbus.Array(unlocked, signature='o'), dbus.ObjectPath(prompt)
        self.fake.call('Unlock', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 'ao', 'aoo')
    def Lock(self, objects, sender, reply, error):
        def work():
            known = [p for p in objects if self.fake.resolve(p)]
            if self.fake.scenario.is_kwallet:
                for p in known:
                    if self.fake.resolve(p) in self.fake.locked:
                        raise invalid_args(f"Can't lock object at path {p}")
            self.fake.set_locked({self.fake.resolve(p) for p in known}, True)
            return dbus.Array(known, signature='o'), dbus.ObjectPath(NO_OBJECT)
        self.fake.call('Lock', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 'aoo', 'a{o(oayays)}')
    def GetSecrets(self, items, session, sender, reply, error):
        def work():
            fake = self.fake
            transport = fake.session(session, sender)
            secrets_ = {p: fake.secret_of(p, transport) for p in items
                        if p in fake.store.items and fake.resolve(p) not in fake.locked}
            return (dbus.Dictionary(secrets_, signature='o(oayays)'),)
        self.fake.call('GetSecrets', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 's', 'o')
    def ReadAlias(self, name, sender, reply, error):
        def work():
            fake = self.fake
            if name == 'default' and fake.alias_missed_left > 0:
                # gnome-keyring's answer to a new client's call handled before it registered the client.
                fake.alias_missed_left -= 1
                log(f'ReadAlias default answered / ({fake.alias_missed_left} more to miss)')
                return (dbus.ObjectPath(NO_OBJECT),)
            return (dbus.ObjectPath(fake.read_alias(name) or NO_OBJECT),)
        self.fake.call('ReadAlias', self, reply, error, work)

    @secret_method(SERVICE_IFACE, 'so')
    def SetAlias(self, name, collection, sender, reply, error):
        def work():
            store = self.fake.store
            if not re.fullmatch(r'[A-Za-z0-9_]+', name):
                raise invalid_args(f'invalid alias name {name!r}')
            if collection == NO_OBJECT:
                store.aliases.pop(name, None)
            elif collection in store.collections:
                store.aliases[name] = str(collection)
            else:
                raise no_such_object(collection)
            store.save()
            self.fake.sync_objects()
            return ()
        self.fake.call('SetAlias', self, reply, error, work)

    @dbus.service.signal(SERVICE_IFACE, signature='o')
    def CollectionCreated(self, collection):
        pass

    @dbus.service.signal(SERVICE_IFACE, signature='o')
    def CollectionDeleted(self, collection):
        pass

    @dbus.service.signal(SERVICE_IFACE, signature='o')
    def CollectionChanged(self, collection):
        pass


class CollectionObject(SecretObject):
    """A collection, at its own path or at /org/freedesktop/secrets/aliases/NAME."""

    def __init__(self, fake, path, alias=None):
        super().__init__(fake, path)
        self.alias = alias

    def collection(self):
        path = self.fake.read_alias(self.alias) if self.alias else self.path
        if path not in self.fake.store.collections:
            raise unknown_object(self.path)
        return path

    def properties(self):
        path = self.collection()
        record = self.fake.store.collections[path]
        return {COLLECTION_IFACE: {
            'Items': dbus.Array(self.fake.store.items_in(path), signature='o'),
            'Label': dbus.String(record['label']),
            'Locked': dbus.Boolean(path in self.fake.locked),
            'Created': dbus.UInt64(record['created']),
            'Modified': dbus.UInt64(record['modified'])}}

    def set_property(self, interface, name, value):
        if name != 'Label':
            super().set_property(interface, name, value)
        path = self.collection()
        self.fake.store.collections[path]['label'] = str(value)
        self.fake.touch(path)
        self.fake.store.save()
        self.fake.objects[path].properties_changed(COLLECTION_IFACE, 'Label', 'Modified')
        self.fake.objects[SERVICE_PATH].CollectionChanged(dbus.ObjectPath(path))

    @secret_method(COLLECTION_IFACE, '', 'o')
    def Delete(self, sender, reply, error):
        def work():
            self.fake.delete_collection(self.collection())
            return (dbus.ObjectPath(NO_OBJECT),)
        self.fake.call('Delete', self, reply, error, work)

    @secret_method(COLLECTION_IFACE, 'a{ss}', 'ao')
    def SearchItems(self, attributes, sender, reply, error):
        def work():
            unlocked, locked = self.fake.search(attributes, {self.collection()})
            return (dbus.Array(unlocked + locked, signature='o'),)
        self.fake.call('SearchItems', self, reply, error, work)

    @secret_method(COLLECTION_IFACE, 'a{sv}(oayays)b', 'oo')
    def CreateItem(self, properties, secret, replace, sender, reply, error):
        def work():
            fake = self.fake
            collection = self.collection()
            if collection in fake.locked:
                raise is_locked(collection)
            session_path, parameters, value, content_type = secret
            transport = fake.session(session_path, sender)
            label = str(properties.get(ITEM_IFACE + '.Label', ''))
            attributes = {str(k): str(v) for k, v in properties.get(ITEM_IFACE + '.Attributes', {}).items()}
            if transport.miskeyed:
                data, refusal = transport.decode_miskeyed(parameters, value)
                if refusal:
                    # KWallet 5.103 creates the item, then fails to set its secret: a ghost with
                    # an empty secret, no ItemCreated, and an error naming the session.
                    ghost = fake.create_item(collection, label, attributes, b'', str(content_type), announce=False)
                    log(f'miskeyed-session: CreateItem refused, leaving the ghost {ghost}')
                    raise Error('org.qtproject.QtDBus.Error.InvalidObjectPath', f"Can't find session {session_path}")
            else:
                data = transport.decode(parameters, value)
            same = [p for p in fake.store.items_in(collection)
                    if fake.store.items[p]['attributes'] == attributes]
            if replace and same:  # replace the oldest item with exactly these attributes
                path = same[0]
                fake.change_item(path, label=label, secret=data, content_type=str(content_type))
            else:
                path = fake.create_item(collection, label, attributes, data, str(content_type))
            return dbus.ObjectPath(path), dbus.ObjectPath(NO_OBJECT)
        self.fake.call('CreateItem', self, reply, error, work)

    @dbus.service.signal(COLLECTION_IFACE, signature='o')
    def ItemCreated(self, item):
        pass

    @dbus.service.signal(COLLECTION_IFACE, signature='o')
    def ItemDeleted(self, item):
        pass

    @dbus.service.signal(COLLECTION_IFACE, signature='o')
    def ItemChanged(self, item):
        pass


class ItemObject(SecretObject):
    def item(self):
        if self.path not in self.fake.store.items:
            raise unknown_object(self.path)
        return self.fake.store.items[self.path]

    def unlocked_item(self):
        item = self.item()
        if item['collection'] in self.fake.locked:
            raise is_locked(self.path)
        return item

    def kwallet_item(self):
        """The item for GetSecret, SetSecret and Delete: IsLocked when locked, except in
        kwallet-locked, where a locked item is carried on with (KWallet 5.103 accepts SetSecret and
        Delete on a locked wallet); None then when it is locked (GetSecret answers an empty secret)."""
        item = self.item()
        if item['collection'] in self.fake.locked:
            if not self.fake.scenario.is_kwallet:
                raise is_locked(self.path)
            log(f'kwallet-locked: carrying on with locked {self.path}')
            return None
        return item

    def properties(self):
        item = self.item()
        return {ITEM_IFACE: {
            'Locked': dbus.Boolean(item['collection'] in self.fake.locked),
            'Attributes': dbus.Dictionary(self.fake.attributes_of(self.path), signature='ss'),
            'Label': dbus.String(item['label']),
            'Created': dbus.UInt64(item['created']),
            'Modified': dbus.UInt64(item['modified'])}}

    def set_property(self, interface, name, value):
        item = self.unlocked_item()
        if name == 'Label':
            self.fake.change_item(self.path, label=str(value))
        elif name == 'Attributes':
            attributes = {str(k): str(v) for k, v in value.items()}
            if self.fake.scenario.computes_attributes:
                # KeePassXC 2.7: computed attributes are read-only, and a write merges.
                # Title is the entry's title, which is the label.
                refused = sorted(set(attributes) & {'Uuid', 'Path', 'TOTP'})
                if refused:
                    raise invalid_args(f'read-only attribute(s): {", ".join(refused)}')
                label = attributes.pop('Title', item['label'])
                self.fake.change_item(self.path, label=label, attributes={**item['attributes'], **attributes})
                return
            self.fake.change_item(self.path, attributes=attributes)
        else:
            super().set_property(interface, name, value)

    @secret_method(ITEM_IFACE, '', 'o')
    def Delete(self, sender, reply, error):
        def work():
            self.kwallet_item()
            self.fake.delete_item(self.path)
            return (dbus.ObjectPath(NO_OBJECT),)
        self.fake.call('Delete', self, reply, error, work)

    @secret_method(ITEM_IFACE, 'o', '(oayays)')
    def GetSecret(self, session, sender, reply, error):
        def work():
            transport = self.fake.session(session, sender)
            if self.kwallet_item() is None:
                return (transport.encode_empty(),)
            return (self.fake.secret_of(self.path, transport),)
        self.fake.call('GetSecret', self, reply, error, work)

    @secret_method(ITEM_IFACE, '(oayays)')
    def SetSecret(self, secret, sender, reply, error):
        def work():
            session_path, parameters, value, content_type = secret
            transport = self.fake.session(session_path, sender)
            if transport.miskeyed:
                data, refusal = transport.decode_miskeyed(parameters, value)
                if refusal:
                    raise refusal
            else:
                data = transport.decode(parameters, value)
            self.kwallet_item()
            self.fake.change_item(self.path, secret=data, content_type=str(content_type))
            return ()
        self.fake.call('SetSecret', self, reply, error, work)


class SessionObject(SecretObject):
    def properties(self):
        return {}

    @secret_method(SESSION_IFACE)
    def Close(self, sender, reply, error):
        def work():
            self.fake.close_session(self.path)
            return ()
        self.fake.call('Close', self, reply, error, work)


class PromptObject(SecretObject):
    """The prompt Unlock returns in the prompt scenarios (and kwallet-locked with prompt=never or
    complete). `outcome` is what Prompt() leads to:
    complete (unlock, Completed(false, ao)), dismiss (Completed(true, ao [])), never (nothing),
    wrong-type (Completed(false, a string)), exit (the service exits with the prompt open)."""

    def __init__(self, fake, path, outcome, objects, delay):
        super().__init__(fake, path)
        self.outcome, self.objects, self.delay = outcome, list(objects), delay
        self.timer = None

    def properties(self):
        return {}

    @secret_method(PROMPT_IFACE, 's')
    def Prompt(self, window_id, sender, reply, error):
        def work():
            if self.outcome != 'never' and self.timer is None:
                self.timer = GLib.timeout_add(int(self.delay * 1000), self.finish)
            return ()
        self.fake.call('Prompt', self, reply, error, work)

    @secret_method(PROMPT_IFACE)
    def Dismiss(self, sender, reply, error):
        def work():
            if self.timer is not None:
                GLib.source_remove(self.timer)
            self.complete(True, dbus.Array([], signature='o'))
            return ()
        self.fake.call('Dismiss', self, reply, error, work)

    @dbus.service.signal(PROMPT_IFACE, signature='bv')
    def Completed(self, dismissed, result):
        pass

    def finish(self):
        self.timer = None
        if self.outcome == 'complete':
            self.fake.set_locked({self.fake.resolve(p) for p in self.objects if self.fake.resolve(p)}, False)
            self.complete(False, dbus.Array(self.objects, signature='o'))
        elif self.outcome == 'dismiss':
            self.complete(True, dbus.Array([], signature='o'))
        elif self.outcome == 'exit':
            self.fake.exit('Prompt')
        else:  # wrong-type: a string where libsecret expects an array of object paths
            self.complete(False, dbus.String('unlocked'))
        return False

    def complete(self, dismissed, result):
        log(f'prompt {self.path} completed: dismissed={dismissed} result={result!r}')
        self.Completed(dismissed, result)
        if self.path in self.fake.objects:
            self.fake.unexport(self.path)


class CreationPromptObject(PromptObject):
    """The prompt CreateCollection returns in no-default-collection (gnome-keyring asks for the new
    keyring's password): `complete` creates it and completes with its path (`o`), `dismiss`
    completes dismissed and creates nothing."""

    def __init__(self, fake, path, outcome, objects, delay, label, alias):
        super().__init__(fake, path, outcome, objects, delay)
        self.label, self.alias = label, alias

    def finish(self):
        self.timer = None
        if self.outcome == 'complete':
            self.complete(False, dbus.ObjectPath(self.fake.create_collection(self.label, self.alias)))
        else:
            self.complete(True, dbus.ObjectPath(NO_OBJECT))
        return False


class ControlObject(dbus.service.Object):
    """The test-only interface that `control` uses. It never waits and never fails on purpose."""

    def __init__(self, fake, path):
        super().__init__(fake.bus, path)
        self.fake = fake

    @dbus.service.method(CONTROL_IFACE, in_signature='sa{ss}')
    def SetScenario(self, name, params):
        self.fake.set_scenario(Scenario(str(name), {str(k): str(v) for k, v in params.items()}))

    @dbus.service.method(CONTROL_IFACE, out_signature='s')
    def State(self):
        return json.dumps(self.fake.state(), indent=2, sort_keys=True)

    @dbus.service.method(CONTROL_IFACE)
    def Reset(self):
        log('reset')
        self.fake.reset()

    @dbus.service.method(CONTROL_IFACE, in_signature='ssa{ss}aystt', out_signature='o', byte_arrays=True)
    def AddItem(self, collection, label, attributes, secret, content_type, created, modified):
        collection = self.fake.resolve(str(collection)) or str(collection)
        if collection not in self.fake.store.collections:
            raise no_such_object(collection)
        return self.fake.create_item(collection, str(label), {str(k): str(v) for k, v in attributes.items()},
                                     bytes(secret), str(content_type), int(created), int(modified))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--state', required=True, help='JSON file holding the items (created if missing)')
    parser.add_argument('--scenario', nargs='+', metavar='WORD',
                        help='NAME [KEY=VALUE...] (default: $FAKE_SECRET_SERVICE_SCENARIO, else normal)')
    args = parser.parse_args()
    words = args.scenario or shlex.split(os.environ.get('FAKE_SECRET_SERVICE_SCENARIO', '')) or ['normal']
    try:
        scenario = Scenario.parse(words)
    except dbus.DBusException as e:
        sys.exit(f'fake-secret-service: {e}')

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    fake = Fake(bus, Store(args.state), scenario)
    loop = GLib.MainLoop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, signum, loop.quit)
    try:  # the name last: once it is owned, every object is there
        name = dbus.service.BusName(BUS_NAME, bus, do_not_queue=True)
    except dbus.exceptions.NameExistsException:
        sys.exit(f'fake-secret-service: {BUS_NAME} is already owned on this bus')
    log(f'pid {os.getpid()} owns {BUS_NAME}; state {args.state}; scenario {scenario}'
        + (' (after the readiness probe)' if fake.pending else ''))
    loop.run()
    del name
    log('stopped')


if __name__ == '__main__':
    main()
