#!/usr/bin/env bash
# dbus-test/run --provider keepassxc dbus-test/providers/keepassxc-lock-restart-repro.sh [ROUNDS] [kill|stop] [DELAY_MS]
#
# KeePassXC 2.7.4 loses an item stored while it is saving its database, with secret-tool as the
# only client (keepassxc-cli writes the filler while KeePassXC is stopped): no PingStorage in any
# process. See PROVIDERS.md (keepassxc) for the cause.
#
# Set-up: one 2 MB filler item stored and kept, so that each save takes a few hundred
# milliseconds (the harness's database has no recycle bin, so a deleted filler would leave the
# file; with one, the integration suite's database kept the 1 MiB item of oneMebibyteItemRoundTrips
# that way). The filler goes into a group of its own, which a save writes after the items of the
# root group: with the filler among them, an item stored while the save wrote them crashed
# KeePassXC in 4 rounds of 4 instead (PROVIDERS.md).
# Each round then, as the integration suite did:
#   1. stores item x (KeePassXC starts saving 150 ms later), as an earlier test's last write did;
#   2. stores item y halfway through that save (KeePassXC writes through an unnamed temporary
#      file in the database's directory, seen in /proc/PID/fd while it saves; how long a save
#      lasts is measured once first): after the save has written the root group's entries,
#      while it writes the filler's group;
#   3. waits until the database file has been left alone for 1.2 s with no save under way;
#   4. locks the collection (Lock, then its prompt, as `ctl lock`), ends KeePassXC (SIGKILL by
#      default, as the integration test does; `stop` for SIGTERM), starts it again and looks
#      both items up.
# DELAY_MS stores y that long after the save began instead of halfway (the control: with a delay
# longer than a save, y is stored after it and kept).
# A round counts y LOST when the lookup after the restart finds nothing (before the lock, y is
# found: KeePassXC holds it in memory only). x is always kept: its save began after it.
# KeePassXC may also crash (SIGSEGV) when y arrives while it writes the database; such a round is
# counted apart (the provider log says "Segmentation fault") and KeePassXC is started again.
# Exits 1 when an item was lost, 0 when every item was kept.
set -uo pipefail
rounds=${1:-10}
ending=${2:-kill}
delay_ms=${3:-}
: "${DBUS_TEST_CTL:?run this inside dbus-test/run --provider keepassxc}"
[[ ${DBUS_TEST_PROVIDER:-} == keepassxc ]] || { echo "run this with --provider keepassxc" >&2; exit 2; }
[[ $ending == kill || $ending == stop ]] || { echo "the second argument is kill or stop" >&2; exit 2; }
ctl=$DBUS_TEST_CTL
dir="$DBUS_TEST_DIR/keepassxc"
db="$dir/passwords.kdbx"
log="$DBUS_TEST_DIR/provider.log"

saving() { find "/proc/$("$ctl" pid)/fd" -lname "$dir/#*" 2>/dev/null | grep -q .; }

# Until the file is unchanged and no save is under way for 1.2 s (at most 30 s).
wait_until_saved() {
    local last now quiet=0
    last=$(stat -c %y "$db")
    for _ in $(seq 1 300); do
        sleep 0.1
        now=$(stat -c %y "$db")
        if [[ $now != "$last" ]] || saving; then last=$now; quiet=0; else quiet=$((quiet + 1)); fi
        ((quiet >= 12)) && return 0
    done
}

# Until a save is under way (at most 3 s); fails when none began.
wait_until_saving() {
    for _ in $(seq 1 600); do
        saving && return 0
        sleep 0.005
    done
    return 1
}

lookup() { timeout 10 secret-tool lookup service keepassxc-repro account "$1" 2>/dev/null; }
store() { printf '%s' "$2" | timeout 10 secret-tool store --label="repro $1" service keepassxc-repro account "$1"; }

# The filler, written with keepassxc-cli while KeePassXC is stopped (a Secret Service client
# cannot choose the group).
"$ctl" stop
keepassxc-cli mkdir -q "$db" repro-filler < "$dir/password" >> "$log" 2>&1
{ cat "$dir/password"; head -c 1500000 /dev/urandom | base64 -w0; echo; } |
    keepassxc-cli add -q -p "$db" repro-filler/filler >> "$log" 2>&1 ||
    { echo "could not store the filler item" >&2; exit 2; }
"$ctl" start
wait_until_saved
# How long a save lasts: store, wait until the save is under way, then until it has ended.
store measure kept
wait_until_saving || { echo "KeePassXC did not save after a store" >&2; exit 2; }
began=$(date +%s%N)
while saving; do sleep 0.005; done
lasts=$((($(date +%s%N) - began) / 1000000))
wait_until_saved
delay_ms=${delay_ms:-$((lasts / 2))}
echo "database: $(stat -c %s "$db") bytes; a save lasts $lasts ms; y is stored $delay_ms ms after one began"
delay=$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')

said() { if [[ -n $1 ]]; then echo kept; else echo LOST; fi; }
seen() { if [[ -n $1 ]]; then echo found; else echo "not found"; fi; }

lost=0 crashed=0 counted=0
for round in $(seq 1 "$rounds"); do
    x="x-$$-$round" y="y-$$-$round"
    segfaults=$(grep -c "Segmentation fault" "$log")
    if ! store "$x" kept; then echo "round $round: x's store failed (not counted)"; continue; fi
    if ! wait_until_saving; then echo "round $round: no save seen after x (not counted)"; wait_until_saved; continue; fi
    sleep "$delay"
    store "$y" kept
    wait_until_saved
    before=$(lookup "$y")
    "$ctl" lock
    "$ctl" "$ending"
    "$ctl" start
    found_x=$(lookup "$x") found_y=$(lookup "$y")
    if (($(grep -c "Segmentation fault" "$log") > segfaults)); then
        crashed=$((crashed + 1))
        echo "round $round: KeePassXC crashed (SIGSEGV); x $(said "$found_x"), y $(said "$found_y") (not counted)"
        continue
    fi
    counted=$((counted + 1))
    if [[ $found_y == kept ]]; then
        echo "round $round: y kept (x $(said "$found_x"); y before the lock: $(seen "$before"))"
    else
        lost=$((lost + 1))
        echo "round $round: y LOST (x $(said "$found_x"); y before the lock: $(seen "$before"))"
    fi
done
echo "$lost of $counted items y (stored $delay_ms ms after a save began) lost across a lock and a restart ($ending); KeePassXC crashed in $crashed more rounds"
((lost == 0))
