/* LD_PRELOAD wrapper around libmpi's bcast and reduce algorithms (ompi_coll_base_*_intra_*, the
 * functions coll/tuned calls once it has chosen): every call made on a communicator's rank 0 is
 * appended to the file named by COLLAT_RECORD as
 *   "<operation> <algorithm function> <P> <bytes> <segsize> <fan-out or radix, -1 if none> <depth>"
 * and then handed to the real function. depth 0 is coll/tuned's choice; deeper lines are the
 * fall-backs an algorithm calls itself (k-nomial -> binomial, Rabenseifner -> linear, ...).
 * With COLLAT_RECORD_DRY set the real function is not called (decide.c asks the decision functions
 * on a communicator that only pretends to have P ranks).
 * Signatures: ompi/mca/coll/base/coll_base_functions.h of OpenMPI 4.1.x. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static __thread int depth;
static int dry = -1;

static void note(const char *op, const char *name, int count, MPI_Datatype dtype, MPI_Comm comm,
                 long segsize, long knob) {
    int rank = -1, size = 0, tsize = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank != 0) return;
    MPI_Comm_size(comm, &size);
    MPI_Type_size(dtype, &tsize);
    const char *path = getenv("COLLAT_RECORD");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s %s %d %ld %ld %ld %d\n", op, name, size, (long)count * tsize, segsize, knob, depth);
    fclose(f);
}

static void *real(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) { fprintf(stderr, "record: %s not found in libmpi\n", name); abort(); }
    return f;
}


/* One wrapper: note the call, then (unless dry) hand it to libmpi's own function. PARAMS and ARGS
 * are parenthesised lists, so one macro serves every signature. */
#define WRAP(OP, NAME, PARAMS, ARGS, SEG, KNOB)                                            \
    int ompi_coll_base_##OP##_intra_##NAME PARAMS {                                       \
        static int(*fn) PARAMS;                                                           \
        if (!fn) fn = real("ompi_coll_base_" #OP "_intra_" #NAME);                        \
        note(#OP, #NAME, count, dt, comm, SEG, KNOB);                                     \
        if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;                           \
        if (dry) return MPI_SUCCESS;                                                      \
        depth++;                                                                          \
        int rc = fn ARGS;                                                                 \
        depth--;                                                                          \
        return rc;                                                                        \
    }

#define BCAST_PARAMS void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module
#define BCAST_ARGS buf, count, dt, root, comm, module
#define REDUCE_PARAMS const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module
#define REDUCE_ARGS sbuf, rbuf, count, dt, op, root, comm, module

WRAP(bcast, basic_linear, (BCAST_PARAMS), (BCAST_ARGS), 0, -1)
WRAP(bcast, chain, (BCAST_PARAMS, uint32_t segsize, int32_t chains), (BCAST_ARGS, segsize, chains), segsize, chains)
WRAP(bcast, pipeline, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(bcast, binomial, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(bcast, bintree, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(bcast, split_bintree, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(bcast, knomial, (BCAST_PARAMS, uint32_t segsize, int radix), (BCAST_ARGS, segsize, radix), segsize, radix)
WRAP(bcast, scatter_allgather, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(bcast, scatter_allgather_ring, (BCAST_PARAMS, uint32_t segsize), (BCAST_ARGS, segsize), segsize, -1)
WRAP(reduce, basic_linear, (REDUCE_PARAMS), (REDUCE_ARGS), 0, -1)
WRAP(reduce, chain, (REDUCE_PARAMS, uint32_t segsize, int fanout, int max_reqs), (REDUCE_ARGS, segsize, fanout, max_reqs), segsize, fanout)
WRAP(reduce, pipeline, (REDUCE_PARAMS, uint32_t segsize, int max_reqs), (REDUCE_ARGS, segsize, max_reqs), segsize, -1)
WRAP(reduce, binary, (REDUCE_PARAMS, uint32_t segsize, int max_reqs), (REDUCE_ARGS, segsize, max_reqs), segsize, -1)
WRAP(reduce, binomial, (REDUCE_PARAMS, uint32_t segsize, int max_reqs), (REDUCE_ARGS, segsize, max_reqs), segsize, -1)
WRAP(reduce, in_order_binary, (REDUCE_PARAMS, uint32_t segsize, int max_reqs), (REDUCE_ARGS, segsize, max_reqs), segsize, -1)
WRAP(reduce, redscat_gather, (REDUCE_PARAMS), (REDUCE_ARGS), 0, -1)
