// CLibSecret: libsecret, GLib and GIO as the one Clang module SecretService imports, plus the few
// things Swift cannot express. Each group below says why it exists.
#ifndef CLIBSECRET_H
#define CLIBSECRET_H

#include <libsecret/secret.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

// G_IO_ERROR and G_DBUS_ERROR are macros that call the quark functions.
GQuark clibsecret_io_error_quark(void);
GQuark clibsecret_dbus_error_quark(void);

#endif
