/* Ask coll/tuned's fixed decision functions (ompi_coll_tuned_{bcast,reduce}_intra_dec_fixed in
 * mca_coll_tuned.so) what they run for every communicator size PMIN..PMAX and every message size
 * given, without running it: the communicator pretends to have P ranks (fakecomm.h), and record.so must be preloaded with COLLAT_RECORD_DRY=1 so that the
 * algorithm the decision calls is noted and not executed.
 * Usage: decide PMIN PMAX SIZE... (bytes of MPI_CHAR; reduce with MPI_SUM). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*bcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm, void *);
typedef int (*reduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm, void *);

#include "fakecomm.h"

static void *tuned(const char *name) {
    const char *dirs[] = {getenv("COLLAT_TUNED_SO"), "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_tuned.so", NULL};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i]) continue;
        void *h = dlopen(dirs[i], RTLD_NOW | RTLD_GLOBAL);
        if (h && dlsym(h, name)) return dlsym(h, name);
    }
    die("mca_coll_tuned.so or its decision function was not found (set COLLAT_TUNED_SO)");
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) die("usage: decide PMIN PMAX SIZE...");
    if (!getenv("COLLAT_RECORD_DRY")) die("preload record.so with COLLAT_RECORD_DRY=1");
    MPI_Init(&argc, &argv);
    locate();
    bcast_fn bcast = (bcast_fn)tuned("ompi_coll_tuned_bcast_intra_dec_fixed");
    reduce_fn reduce = (reduce_fn)tuned("ompi_coll_tuned_reduce_intra_dec_fixed");
    char buf[1];
    for (int P = atoi(argv[1]); P <= atoi(argv[2]); P++) {
        MPI_Comm fake = (MPI_Comm)as(P, 0);
        for (int a = 3; a < argc; a++) {
            int count = atoi(argv[a]);
            bcast(buf, count, MPI_CHAR, 0, fake, NULL);
            reduce(buf, buf, count, MPI_CHAR, MPI_SUM, 0, fake, NULL);
        }
    }
    MPI_Finalize();
    return 0;
}
