// Raw libsecret for pingstorage-benchmark: see include/CBenchmarkLibsecret.h.
#include "CBenchmarkLibsecret.h"

#include <libsecret/secret.h>
#include <string.h>

// What KeychainStorage writes: service, account, username. DONT_MATCH_NAME: lookups and clears
// do not add `xdg:schema` to the search, so they find items whoever wrote them (as ours do).
static const SecretSchema benchmark_schema = {
    "com.pingidentity.PingStorage",
    SECRET_SCHEMA_DONT_MATCH_NAME,
    {
        { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { "username", SECRET_SCHEMA_ATTRIBUTE_STRING },
        { NULL, 0 },
    },
    0, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

struct CBLItem {
    SecretItem *item;
};

static int fail(GError *gerror, const char *what, char **error) {
    if (error != NULL) {
        *error = g_strdup_printf("%s: %s", what, gerror != NULL ? gerror->message : "failed without a message");
    }
    g_clear_error(&gerror);
    return -1;
}

// The lookup attributes (service + account); with_username adds username = account (for stores).
static GHashTable *attributes_for(const char *service, const char *account, gboolean with_username) {
    GHashTable *attributes = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(attributes, (gpointer) "service", (gpointer) service);
    g_hash_table_insert(attributes, (gpointer) "account", (gpointer) account);
    if (with_username) {
        g_hash_table_insert(attributes, (gpointer) "username", (gpointer) account);
    }
    return attributes;
}

int cbl_connect(char **error) {
    GError *gerror = NULL;
    SecretService *service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, &gerror);
    if (service == NULL) {
        return fail(gerror, "secret_service_get_sync", error);
    }
    g_object_unref(service);
    return 0;
}

int cbl_store(const char *collection, const char *service, const char *account, const char *secret,
              char **error) {
    GError *gerror = NULL;
    GHashTable *attributes = attributes_for(service, account, TRUE);
    char *label = g_strdup_printf("%s (%s)", account, service);
    gboolean stored = secret_password_storev_sync(&benchmark_schema, attributes, collection, label, secret, NULL,
                                                  &gerror);
    g_free(label);
    g_hash_table_unref(attributes);
    return stored ? 0 : fail(gerror, "secret_password_storev_sync", error);
}

int cbl_reconnect(char **error) {
    secret_service_disconnect();
    return cbl_connect(error);
}

typedef struct {
    const char *collection;
    const char *service;
    const char *const *accounts;
    const char *const *secrets;
    size_t count;
    size_t started;
    size_t pending;
    GError *first_error;
} ConcurrentStores;

static void start_store(ConcurrentStores *stores);

static void store_finished(GObject *source, GAsyncResult *result, gpointer user_data) {
    (void) source;
    ConcurrentStores *stores = user_data;
    GError *gerror = NULL;
    if (!secret_password_store_finish(result, &gerror)) {
        if (stores->first_error == NULL) {
            stores->first_error = gerror;
        } else {
            g_clear_error(&gerror);
        }
    }
    stores->pending--;
    if (stores->started < stores->count) start_store(stores);
}

static void start_store(ConcurrentStores *stores) {
    size_t index = stores->started++;
    const char *account = stores->accounts[index];
    GHashTable *attributes = attributes_for(stores->service, account, TRUE);
    char *label = g_strdup_printf("%s (%s)", account, stores->service);
    stores->pending++;
    secret_password_storev(&benchmark_schema, attributes, stores->collection, label, stores->secrets[index], NULL,
                           store_finished, stores);
    g_free(label);
    g_hash_table_unref(attributes);
}

int cbl_store_concurrently(const char *collection, const char *service, const char *const *accounts,
                           const char *const *secrets, size_t count, size_t in_flight, char **error) {
    ConcurrentStores stores = { collection, service, accounts, secrets, count, 0, 0, NULL };
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    while (stores.started < count && stores.started < in_flight) start_store(&stores);
    while (stores.pending > 0) g_main_context_iteration(context, TRUE);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    return stores.first_error == NULL ? 0 : fail(stores.first_error, "secret_password_storev", error);
}

int cbl_lookup(const char *service, const char *account, size_t *length, char **error) {
    GError *gerror = NULL;
    GHashTable *attributes = attributes_for(service, account, FALSE);
    SecretValue *value = secret_password_lookupv_binary_sync(&benchmark_schema, attributes, NULL, &gerror);
    g_hash_table_unref(attributes);
    if (gerror != NULL) {
        if (value != NULL) secret_value_unref(value);
        return fail(gerror, "secret_password_lookupv_binary_sync", error);
    }
    if (value == NULL) return 0;
    gsize size = 0;
    (void) secret_value_get(value, &size);
    *length = size;
    secret_value_unref(value);
    return 1;
}

int cbl_clear(const char *service, const char *account, char **error) {
    GError *gerror = NULL;
    GHashTable *attributes = attributes_for(service, account, FALSE);
    gboolean cleared = secret_password_clearv_sync(&benchmark_schema, attributes, NULL, &gerror);
    g_hash_table_unref(attributes);
    if (gerror != NULL) return fail(gerror, "secret_password_clearv_sync", error);
    return cleared ? 1 : 0;
}

CBLItem *cbl_find_item(const char *service, const char *account, char **error) {
    GError *gerror = NULL;
    SecretService *secret_service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, &gerror);
    if (secret_service == NULL) {
        fail(gerror, "secret_service_get_sync", error);
        return NULL;
    }
    GHashTable *attributes = attributes_for(service, account, FALSE);
    GList *items = secret_service_search_sync(secret_service, &benchmark_schema, attributes, SECRET_SEARCH_UNLOCK,
                                              NULL, &gerror);
    g_hash_table_unref(attributes);
    g_object_unref(secret_service);
    if (gerror != NULL) {
        g_list_free_full(items, g_object_unref);
        fail(gerror, "secret_service_search_sync", error);
        return NULL;
    }
    if (items == NULL) {
        if (error != NULL) *error = g_strdup_printf("no item for service '%s', account '%s'", service, account);
        return NULL;
    }
    CBLItem *found = g_new0(CBLItem, 1);
    found->item = g_object_ref(items->data);
    g_list_free_full(items, g_object_unref);
    return found;
}

int cbl_item_load_secret(CBLItem *item, size_t *length, char **error) {
    GError *gerror = NULL;
    if (!secret_item_load_secret_sync(item->item, NULL, &gerror)) {
        return fail(gerror, "secret_item_load_secret_sync", error);
    }
    SecretValue *value = secret_item_get_secret(item->item);
    if (value == NULL) return 0;
    gsize size = 0;
    (void) secret_value_get(value, &size);
    *length = size;
    secret_value_unref(value);
    return 1;
}

void cbl_item_free(CBLItem *item) {
    if (item == NULL) return;
    g_object_unref(item->item);
    g_free(item);
}

void cbl_free_string(char *string) {
    g_free(string);
}
