// See CLibSecret.h.
#include "CLibSecret.h"

GQuark clibsecret_secret_error_quark(void) { return SECRET_ERROR; }
GQuark clibsecret_io_error_quark(void) { return G_IO_ERROR; }
GQuark clibsecret_dbus_error_quark(void) { return G_DBUS_ERROR; }

typedef struct {
    SecretService parent;
    GDBusConnection *connection;
    gchar *owner;
} CLibSecretSession;

typedef struct {
    SecretServiceClass parent_class;
} CLibSecretSessionClass;

G_DEFINE_TYPE(CLibSecretSession, clibsecret_session, SECRET_TYPE_SERVICE)

enum { PROP_CONNECTION = 1, PROP_OWNER };

static void clibsecret_session_init(CLibSecretSession *self) { (void)self; }

static void clibsecret_session_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
    CLibSecretSession *self = (CLibSecretSession *)object;
    switch (id) {
    case PROP_CONNECTION:
        g_clear_object(&self->connection);
        self->connection = g_value_dup_object(value);
        break;
    case PROP_OWNER:
        g_free(self->owner);
        self->owner = g_value_dup_string(value);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static GObject *clibsecret_session_constructor(GType type, guint n_properties, GObjectConstructParam *properties) {
    // SecretService's constructor sets the shared session bus, the well-known name and no proxy
    // flags; ours runs after it (construct-only properties may still be set here).
    GObject *object = G_OBJECT_CLASS(clibsecret_session_parent_class)->constructor(type, n_properties, properties);
    CLibSecretSession *self = (CLibSecretSession *)object;
    g_object_set(object,
                 "g-bus-type", G_BUS_TYPE_NONE,
                 "g-connection", self->connection,
                 "g-name", self->owner,
                 "g-flags", G_DBUS_PROXY_FLAGS_DO_NOT_LOAD_PROPERTIES | G_DBUS_PROXY_FLAGS_DO_NOT_CONNECT_SIGNALS
                     | G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START,
                 NULL);
    return object;
}

static void clibsecret_session_finalize(GObject *object) {
    CLibSecretSession *self = (CLibSecretSession *)object;
    g_clear_object(&self->connection);
    g_free(self->owner);
    G_OBJECT_CLASS(clibsecret_session_parent_class)->finalize(object);
}

static void clibsecret_session_class_init(CLibSecretSessionClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->constructor = clibsecret_session_constructor;
    object_class->set_property = clibsecret_session_set_property;
    object_class->finalize = clibsecret_session_finalize;
    g_object_class_install_property(
        object_class, PROP_CONNECTION,
        g_param_spec_object("clibsecret-connection", "Connection", "The D-Bus connection to use",
                            G_TYPE_DBUS_CONNECTION,
                            G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
    g_object_class_install_property(
        object_class, PROP_OWNER,
        g_param_spec_string("clibsecret-owner", "Owner", "The provider's unique bus name", NULL,
                            G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
}

void clibsecret_session_open(GDBusConnection *connection, const char *owner,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data) {
    g_async_initable_new_async(clibsecret_session_get_type(), G_PRIORITY_DEFAULT, cancellable, callback, user_data,
                               "flags", SECRET_SERVICE_OPEN_SESSION,
                               "clibsecret-connection", connection,
                               "clibsecret-owner", owner,
                               NULL);
}

SecretService *clibsecret_session_open_finish(GAsyncResult *result, GError **error) {
    GObject *source = g_async_result_get_source_object(result);
    GObject *object = g_async_initable_new_finish(G_ASYNC_INITABLE(source), result, error);
    g_object_unref(source);
    return object == NULL ? NULL : SECRET_SERVICE(object);
}
