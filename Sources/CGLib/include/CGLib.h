// CGLib: GLib and GIO (GDBus, GVariant) as the one Clang module SecretService imports, plus the
// few things Swift cannot express. Each group below says why it exists. (libsecret is not used:
// SecretService speaks D-Bus through GDBus, and its transport encryption is CGcrypt's.)
#ifndef CGLIB_H
#define CGLIB_H

#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

// G_IO_ERROR and G_DBUS_ERROR are macros that call the quark functions.
GQuark cglib_io_error_quark(void);
GQuark cglib_dbus_error_quark(void);

#endif
