/* Ask coll/tuned's fixed decision functions (ompi_coll_tuned_{bcast,reduce}_intra_dec_fixed in
 * mca_coll_tuned.so) what they run for every communicator size PMIN..PMAX and every message size
 * given, without running it: the communicator is a private copy of MPI_COMM_WORLD with the size
 * written in (as in topo.c), and record.so must be preloaded with COLLAT_RECORD_DRY=1 so that the
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

enum { COMM_BYTES = 4096, GROUP_BYTES = 1024 };
static unsigned char comm[COMM_BYTES], group[GROUP_BYTES];
static int size_off = -1;

static void die(const char *what) { fprintf(stderr, "decide: %s\n", what); exit(2); }

static void locate(void) {  /* the group-size field; the caller's rank stays 0 (a singleton) */
    MPI_Group g;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    memcpy(comm, (void *)MPI_COMM_WORLD, COMM_BYTES);
    memcpy(group, (void *)g, GROUP_BYTES);
    int found = 0;
    for (int off = 0; off + (int)sizeof(void *) <= COMM_BYTES; off += sizeof(void *))
        if (*(void **)(comm + off) == (void *)g) { *(void **)(comm + off) = group; found++; }
    if (!found) die("the communicator's group pointer was not found");
    for (int off = 0; off + 4 <= GROUP_BYTES && size_off < 0; off += 4) {
        int32_t keep = *(int32_t *)(group + off), got = -1;
        if (keep != 1) continue;
        *(int32_t *)(group + off) = 12345;
        if (MPI_Group_size((MPI_Group)group, &got) == MPI_SUCCESS && got == 12345) size_off = off;
        *(int32_t *)(group + off) = keep;
    }
    if (size_off < 0) die("the size field was not found");
}

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
        *(int32_t *)(group + size_off) = P;
        int got = -1;
        MPI_Comm_size((MPI_Comm)comm, &got);
        if (got != P) die("the fake communicator does not read back");
        for (int a = 3; a < argc; a++) {
            int count = atoi(argv[a]);
            bcast(buf, count, MPI_CHAR, 0, (MPI_Comm)comm, NULL);
            reduce(buf, buf, count, MPI_CHAR, MPI_SUM, 0, (MPI_Comm)comm, NULL);
        }
    }
    MPI_Finalize();
    return 0;
}
