// CLibSecret: libsecret, GLib and GIO as the one Clang module SecretService imports, plus the few
// things Swift cannot express. Each group below says why it exists.
#ifndef CLIBSECRET_H
#define CLIBSECRET_H

// libsecret's D-Bus path API (secret-paths.h: secret_service_encode_dbus_secret and
// secret_service_decode_dbus_secret) is only declared with SECRET_API_SUBJECT_TO_CHANGE. It has
// been unchanged since libsecret 0.18.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>

// SECRET_ERROR, G_IO_ERROR and G_DBUS_ERROR are macros that call the quark functions.
GQuark clibsecret_secret_error_quark(void);
GQuark clibsecret_io_error_quark(void);
GQuark clibsecret_dbus_error_quark(void);

// A libsecret transport session on a connection the caller owns, with the provider process
// `owner` (a unique bus name such as ":1.7").
//
// libsecret opens its SecretService proxy on the process's shared session-bus connection, which
// GLib creates with exit-on-close on (the process gets SIGTERM when the bus goes away), and which
// cannot point at any other bus. This subclass of SecretService takes the connection and the
// owner as construct properties and puts them in place of the shared bus and the well-known name
// right after libsecret's own constructor has run. The proxy loads no properties, connects no
// signals and starts nothing (the client tracks the provider itself), so opening it costs one
// D-Bus round trip: OpenSession (with libsecret's DH key exchange). The session is then used only
// through secret_service_encode_dbus_secret / secret_service_decode_dbus_secret, which read it
// under the service's own mutex and may be called from any thread.
//
// Must be called on the thread whose thread-default main context is to run the callback.
// The GType is registered in clibsecret.c (G_DEFINE_TYPE: registered once, thread-safely). Never
// define it in this header: a `static` there is one copy per importing module, and the second
// module's registration of the same name fails (GType 0).
GType clibsecret_session_get_type(void);
void clibsecret_session_open(GDBusConnection *connection, const char *owner,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data);
// Returns the SecretService (transfer full), or NULL with `error` set.
SecretService *clibsecret_session_open_finish(GAsyncResult *result, GError **error);

#endif
