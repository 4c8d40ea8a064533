// swift-hello: the least a Swift program does, built as ping-keyring ships (the Swift runtime
// linked in): start, print one line, exit. The cold-start section times it as the floor of any
// Swift command-line tool's `--help` on this machine, next to /bin/true and `secret-tool --help`.
print("hello")
