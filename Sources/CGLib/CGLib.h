// CGLib: GLib and GIO (GDBus, GVariant, GUnixFDList) as the one Clang module SecretService imports,
// with the compiler and linker flags of gio-unix-2.0 (pkg-config). It declares nothing itself: Swift
// calls what it needs directly (G_IO_ERROR and G_DBUS_ERROR are macros over g_io_error_quark() and
// g_dbus_error_quark(), which Swift calls). libsecret is not used: SecretService speaks D-Bus through
// GDBus, and its transport encryption is CGcrypt's.
#ifndef CGLIB_H
#define CGLIB_H

#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

#endif
