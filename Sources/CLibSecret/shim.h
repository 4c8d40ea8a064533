// CLibSecret: libsecret, GLib and GIO as one Clang module for Swift.
//
// Why this header exists: libsecret's D-Bus path API (secret-paths.h) is only declared when
// SECRET_API_SUBJECT_TO_CHANGE is defined. That API is what lets SecretService talk to items by
// object path (one GetSecret round trip for a known item) without building a proxy per item; it has
// been unchanged since libsecret 0.18. Everything else is called directly from Swift: the library
// uses only the non-variadic entry points and the `…v` functions, so no C glue is needed beyond
// the small inline helpers below, each of which wraps a macro Swift cannot see.
#ifndef CLIBSECRET_SHIM_H
#define CLIBSECRET_SHIM_H

#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>

// G_DBUS_PROXY() is a checked cast macro; SecretService is a GDBusProxy subclass.
static inline GDBusProxy *clibsecret_service_as_proxy(SecretService *service) {
    return G_DBUS_PROXY(service);
}

// SECRET_ERROR, G_IO_ERROR and G_DBUS_ERROR are macros that call the quark functions.
static inline GQuark clibsecret_secret_error_quark(void) { return SECRET_ERROR; }
static inline GQuark clibsecret_io_error_quark(void) { return G_IO_ERROR; }
static inline GQuark clibsecret_dbus_error_quark(void) { return G_DBUS_ERROR; }

#endif
