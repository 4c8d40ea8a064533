// CLibSecret: libsecret, GLib and GIO as one Clang module for Swift.
//
// Why this header exists: libsecret's D-Bus path API (secret-paths.h) is only declared when
// SECRET_API_SUBJECT_TO_CHANGE is defined. That API is what lets SecretService talk to items by
// object path (one GetSecret round trip for a known item) without building a proxy per item; it has
// been unchanged since libsecret 0.18. Everything else is called directly from Swift: the library
// uses only the non-variadic entry points and the `…v` functions, so no C glue is needed beyond
// the small inline helpers below, each of which wraps a macro Swift cannot see, and one
// SecretService subclass that works around a libsecret crash (see the end of this file).
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

// A SecretService subclass that survives a provider restart.
//
// libsecret 0.20.5's handler of the legacy CollectionCreated/CollectionDeleted signals reads the
// proxy's cached "Collections" property without checking it: GDBus clears that cache when the
// provider's name owner vanishes, and a provider that sends those signals when it starts again
// (KeePassXC does) then crashes the process inside libsecret (newer libsecret returns early
// instead). This subclass only forwards signals while the property is cached. It can go once
// libsecret >= 0.21 is the oldest supported version.
static inline void clibsecret_service_g_signal(GDBusProxy *proxy, const gchar *sender_name,
                                        const gchar *signal_name, GVariant *parameters) {
    GVariant *collections = g_dbus_proxy_get_cached_property(proxy, "Collections");
    if (collections == NULL) return;
    g_variant_unref(collections);
    // The parent's implementation, looked up each time: the header keeps no global state
    // (Swift's importer emits a header's functions, not its globals).
    GDBusProxyClass *parent = G_DBUS_PROXY_CLASS(g_type_class_peek(SECRET_TYPE_SERVICE));
    parent->g_signal(proxy, sender_name, signal_name, parameters);
}

static inline void clibsecret_service_class_init(gpointer klass, gpointer class_data) {
    (void)class_data;
    G_DBUS_PROXY_CLASS(klass)->g_signal = clibsecret_service_g_signal;
}

// The GType to pass to secret_service_open(). G_DEFINE_TYPE needs a .c file, which a system
// library target cannot have, so the type is registered by hand, once.
static inline GType clibsecret_service_get_type(void) {
    static gsize type = 0;
    if (g_once_init_enter(&type)) {
        GType registered = g_type_register_static_simple(
            SECRET_TYPE_SERVICE, g_intern_static_string("CLibSecretService"), sizeof(SecretServiceClass),
            clibsecret_service_class_init, sizeof(SecretService), NULL, 0);
        g_once_init_leave(&type, registered);
    }
    return type;
}

#endif
