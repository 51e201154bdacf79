// OpenBLAS's CBLAS interface (Debian: libopenblas-dev; pkg-config adds the include path).
#include <cblas.h>
// Thread control lives outside the CBLAS standard.
void openblas_set_num_threads(int num_threads);
// The kernel set OpenBLAS chose for this CPU ("Haswell", "SkylakeX", "Prescott", …).
char *openblas_get_corename(void);
