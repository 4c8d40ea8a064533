#!/usr/bin/env bash
# dbus-test/run --provider keepassxc dbus-test/providers/keepassxc-lock-restart-repro.sh [ROUNDS] [kill|stop]
#
# KeePassXC alone, with secret-tool (libsecret) as the only client: no PingStorage in any process.
# Each round stores an item, waits until the database file has been written and then left alone
# for 1.2 s (KeePassXC saves 0.1-0.3 s after a change), locks the collection (Lock, then its
# prompt, as `ctl lock`), ends KeePassXC (SIGKILL by default, as the integration test does; `stop`
# for SIGTERM), starts it again and looks the item up. Prints each round's outcome and a summary;
# exits 1 when an item was lost, 0 when every item was kept. See PROVIDERS.md (keepassxc).
set -uo pipefail
rounds=${1:-20}
ending=${2:-kill}
: "${DBUS_TEST_CTL:?run this inside dbus-test/run --provider keepassxc}"
[[ ${DBUS_TEST_PROVIDER:-} == keepassxc ]] || { echo "run this with --provider keepassxc" >&2; exit 2; }
[[ $ending == kill || $ending == stop ]] || { echo "the second argument is kill or stop" >&2; exit 2; }
db="$DBUS_TEST_DIR/keepassxc/passwords.kdbx"

# Waits until the database file's modification time has not changed for 1.2 s (at most 10 s).
wait_until_saved() {
    local last now quiet=0
    last=$(stat -c %Y.%y "$db" 2>/dev/null)
    for _ in $(seq 1 100); do
        sleep 0.1
        now=$(stat -c %Y.%y "$db" 2>/dev/null)
        if [[ $now != "$last" ]]; then last=$now; quiet=0; else quiet=$((quiet + 1)); fi
        ((quiet >= 12)) && return 0
    done
}

lost=0
for round in $(seq 1 "$rounds"); do
    account="repro-$$-$round"
    if ! printf 'kept-%s' "$round" | timeout 10 secret-tool store --label="repro $round" service keepassxc-repro account "$account"; then
        echo "round $round: the store failed (not counted)"
        continue
    fi
    wait_until_saved
    "$DBUS_TEST_CTL" lock
    "$DBUS_TEST_CTL" "$ending"
    "$DBUS_TEST_CTL" start
    found=$(timeout 10 secret-tool lookup service keepassxc-repro account "$account" 2>&1)
    if [[ $found == "kept-$round" ]]; then
        echo "round $round: kept"
    else
        lost=$((lost + 1))
        echo "round $round: LOST (lookup printed '${found}'; items of the test service now: $(timeout 10 secret-tool search --all service keepassxc-repro 2>/dev/null | grep -c '^\[' ))"
    fi
done
echo "$lost of $rounds items lost across a lock and a restart ($ending)"
((lost == 0))
