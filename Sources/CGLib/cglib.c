// See CGLib.h.
#include "CGLib.h"

GQuark cglib_io_error_quark(void) { return G_IO_ERROR; }
GQuark cglib_dbus_error_quark(void) { return G_DBUS_ERROR; }
