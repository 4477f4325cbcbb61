/* The version of the library linked in (version.h). */
#include "tpu/version.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

const char *tpu_version(void)
{
    return STR(TPU_VERSION_MAJOR) "." STR(TPU_VERSION_MINOR) "." STR(TPU_VERSION_PATCH);
}
