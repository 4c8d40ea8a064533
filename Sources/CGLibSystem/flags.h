// CGLibSystem carries only the compiler and linker flags of gio-unix-2.0 (pkg-config: GIO, GObject
// and GLib) for CGLib, the C target Swift imports. It declares nothing itself, so that GLib's
// headers are part of exactly one Clang module.
