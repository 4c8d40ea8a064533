#!/usr/bin/python3
# launch.py PASSWORD_FILE: starts kwalletd5 with its wallet `kdewallet` open and no dialog, prints
# kwalletd5's PID, lets go of stdout, then stays behind as kwalletd5's parent until it exits:
# 1. pam-login start, as pam_kwallet5 does it (kwalletd main.cpp, kwallet-pam pam_kwallet.c):
#    `PAM_KWALLET5_LOGIN=1 kwalletd5 --pam-login PIPE_FD SOCKET_FD`. Before its QApplication
#    exists it reads the 56-byte key from the pipe, then accepts one connection on the listening
#    socket and reads VAR=value lines until EOF. Key = PBKDF2-HMAC-SHA512(password, 56-byte salt,
#    50,000 iterations, 56 bytes); the salt is kept where pam_kwallet5 keeps it,
#    $XDG_DATA_HOME/kwalletd/kdewallet.salt (kwalletd never reads it when opened this way).
# 2. The Secret Service layer reports the collection Locked until it opened the wallet itself:
#    Unlock + Prompt completes at once, without a dialog, as the wallet is already open.
# 3. kwalletd writes a change to disk 5 s later and dies on SIGTERM without writing, so a quick
#    restart would lose secrets (their attributes, in a JSON file written at once, would come back
#    with an empty secret): on every change signal, ask for KWallet.sync.
#    That is best effort: the sync can still arrive after a SIGTERM sent right after a store (1
#    lost secret in 30 quick restarts under load). So kwalletd5 also starts with SIGTERM blocked,
#    and a pending SIGTERM (seen in /proc/PID/status) becomes: sync, wait until kwalletd has done
#    it, SIGKILL. To the harness, SIGTERM still stops it within a few tens of ms.
# 4. As the parent it reaps kwalletd5 the moment it exits, so the harness's `kill -0` sees it gone
#    at once (this machine's init reaps orphans only every second or two).
import hashlib, os, signal, socket, subprocess, sys
import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

COLLECTION = '/org/freedesktop/secrets/collection/kdewallet'
APPID = 'dbus-test'


def start_kwalletd(password_file):
    password = open(password_file, 'rb').read().strip()
    wallet_dir = os.path.join(os.environ['XDG_DATA_HOME'], 'kwalletd')
    os.makedirs(wallet_dir, mode=0o700, exist_ok=True)
    salt_path = os.path.join(wallet_dir, 'kdewallet.salt')
    if not os.path.exists(salt_path):
        fd = os.open(salt_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(56))
        os.close(fd)
    key = hashlib.pbkdf2_hmac('sha512', password, open(salt_path, 'rb').read(), 50000, 56)

    pipe_r, pipe_w = os.pipe()
    sock_path = os.path.join(os.environ['XDG_RUNTIME_DIR'], 'kwallet5.socket')
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(1)
    env = dict(os.environ, PAM_KWALLET5_LOGIN='1', QT_QPA_PLATFORM='offscreen')
    if os.environ.get('DBUS_TEST_DISPLAY'):      # dbus-test/run --prompter: its dialogs on the display
        env.update(QT_QPA_PLATFORM='xcb', DISPLAY=os.environ['DBUS_TEST_DISPLAY'])
    log = open(os.path.join(os.environ['DBUS_TEST_DIR'], 'provider.log'), 'ab')
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})   # inherited by kwalletd5
    daemon = subprocess.Popen(['kwalletd5', '--pam-login', str(pipe_r), str(listener.fileno())],
                              pass_fds=(pipe_r, listener.fileno()), env=env,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(pipe_r)
    listener.close()
    os.write(pipe_w, key)
    os.close(pipe_w)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(sock_path)           # no variables to send: connect, then EOF
    client.close()
    os.unlink(sock_path)
    return daemon.pid


def main():
    try:
        os.setsid()                      # signals meant for the harness stay away from us both
    except OSError:
        pass
    pid = start_kwalletd(sys.argv[1])
    print(pid, flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)

    loop = GLib.MainLoop()
    GLib.child_watch_add(GLib.PRIORITY_DEFAULT, pid, lambda *_: loop.quit())
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()             # exits by itself when the bus goes away
    synced = {}                          # kwallet, handle once setup() has run

    def setup():                         # polled until kwalletd answers
        # The sync handle and the signal receivers come first: the harness sees the provider ready
        # (and may store) as soon as the collection is unlocked.
        try:
            kwallet = dbus.Interface(bus.get_object('org.kde.kwalletd5', '/modules/kwalletd5', introspect=False),
                                     'org.kde.KWallet')
            # sync() only acts on a handle this connection opened; Prompt on Open=false: no dialog.
            handle = kwallet.open('kdewallet', dbus.Int64(0), APPID, timeout=10)
        except dbus.DBusException:
            return True                  # not up yet
        if not synced:
            synced.update(kwallet=kwallet, handle=handle)
            sync = lambda *_: kwallet.sync(handle, APPID, ignore_reply=True)
            bus.add_signal_receiver(sync, 'folderUpdated', 'org.kde.KWallet', 'org.kde.kwalletd5')
            for member in ('ItemCreated', 'ItemChanged', 'ItemDeleted'):
                bus.add_signal_receiver(sync, member, 'org.freedesktop.Secret.Collection', 'org.kde.kwalletd5')
        try:
            service = dbus.Interface(bus.get_object('org.freedesktop.secrets', '/org/freedesktop/secrets', introspect=False),
                                     'org.freedesktop.Secret.Service')
            _, prompt = service.Unlock([dbus.ObjectPath(COLLECTION)], timeout=5)
            if prompt != '/':
                bus.get_object('org.freedesktop.secrets', prompt, introspect=False).Prompt(
                    '', dbus_interface='org.freedesktop.Secret.Prompt', timeout=5)
        except dbus.DBusException:
            return True                  # not published yet (first start: never)
        return False

    def sigterm_pending():
        with open(f'/proc/{pid}/status') as status:
            for line in status:
                if line.startswith('ShdPnd:'):
                    return int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1))
        return False

    def watch_sigterm():                 # polled every 20 ms
        try:
            if not sigterm_pending():
                return True
        except OSError:
            return False                 # already gone
        if synced:
            try:                         # sync has no reply; a reply to the next call means it is done
                synced['kwallet'].sync(synced['handle'], APPID, ignore_reply=True)
                synced['kwallet'].wallets(timeout=2)
            except dbus.DBusException:
                pass
        os.kill(pid, signal.SIGKILL)
        return False

    GLib.timeout_add(50, setup)
    GLib.timeout_add(20, watch_sigterm)
    loop.run()


main()
