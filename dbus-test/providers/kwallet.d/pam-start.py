#!/usr/bin/python3
# pam-start.py PASSWORD_FILE: starts kwalletd5 the way pam_kwallet5 does, so the wallet opens
# without a dialog, and prints kwalletd5's PID.
# Protocol (kwalletd main.cpp, kwallet-pam pam_kwallet.c): `PAM_KWALLET5_LOGIN=1 kwalletd5
# --pam-login PIPE_FD SOCKET_FD`; before its QApplication exists it reads the 56-byte key from the
# pipe, then accepts one connection on the listening socket and reads VAR=value lines until EOF.
# Key = PBKDF2-HMAC-SHA512(password, 56-byte salt, 50,000 iterations, 56 bytes); the salt lives
# where pam_kwallet5 keeps it, $XDG_DATA_HOME/kwalletd/kdewallet.salt (kwalletd itself never
# reads it when opened this way).
import hashlib, os, socket, subprocess, sys

password = open(sys.argv[1], 'rb').read().strip()
wallet_dir = os.path.join(os.environ['XDG_DATA_HOME'], 'kwalletd')
os.makedirs(wallet_dir, mode=0o700, exist_ok=True)
salt_path = os.path.join(wallet_dir, 'kdewallet.salt')
if not os.path.exists(salt_path):
    fd = os.open(salt_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(56)); os.close(fd)
salt = open(salt_path, 'rb').read()
key = hashlib.pbkdf2_hmac('sha512', password, salt, 50000, 56)

pipe_r, pipe_w = os.pipe()
sock_path = os.path.join(os.environ['XDG_RUNTIME_DIR'], 'kwallet5.socket')
if os.path.exists(sock_path): os.unlink(sock_path)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sock_path); listener.listen(1)

env = dict(os.environ, PAM_KWALLET5_LOGIN='1', QT_QPA_PLATFORM='offscreen')
log = open(os.path.join(os.environ['DBUS_TEST_DIR'], 'provider.log'), 'ab')
# New session (like setsid): signals meant for the harness stay away; only our two fds are passed.
daemon = subprocess.Popen(['kwalletd5', '--pam-login', str(pipe_r), str(listener.fileno())],
                          pass_fds=(pipe_r, listener.fileno()), env=env, stdin=subprocess.DEVNULL,
                          stdout=log, stderr=log, start_new_session=True)
os.close(pipe_r); listener.close()
os.write(pipe_w, key); os.close(pipe_w)
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.connect(sock_path)            # no variables to send: connect, then EOF
client.close()
os.unlink(sock_path)
print(daemon.pid)
