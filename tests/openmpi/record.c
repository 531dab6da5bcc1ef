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


int ompi_coll_base_bcast_intra_basic_linear(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_basic_linear");
    note("bcast", "basic_linear", count, dt, comm, 0, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_chain(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize, int32_t chains) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize, int32_t chains);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_chain");
    note("bcast", "chain", count, dt, comm, segsize, chains);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize, chains);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_pipeline(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_pipeline");
    note("bcast", "pipeline", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_binomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_binomial");
    note("bcast", "binomial", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_bintree(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_bintree");
    note("bcast", "bintree", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_split_bintree(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_split_bintree");
    note("bcast", "split_bintree", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_knomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize, int radix) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize, int radix);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_knomial");
    note("bcast", "knomial", count, dt, comm, segsize, radix);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize, radix);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_scatter_allgather");
    note("bcast", "scatter_allgather", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_bcast_intra_scatter_allgather_ring(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize) {
    static int (*fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module, uint32_t segsize);
    if (!fn) fn = real("ompi_coll_base_bcast_intra_scatter_allgather_ring");
    note("bcast", "scatter_allgather_ring", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(buf, count, dt, root, comm, module, segsize);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_basic_linear(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_basic_linear");
    note("reduce", "basic_linear", count, dt, comm, 0, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_chain(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int fanout, int max_reqs) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int fanout, int max_reqs);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_chain");
    note("reduce", "chain", count, dt, comm, segsize, fanout);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module, segsize, fanout, max_reqs);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_pipeline(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_pipeline");
    note("reduce", "pipeline", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module, segsize, max_reqs);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_binary(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_binary");
    note("reduce", "binary", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module, segsize, max_reqs);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_binomial(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_binomial");
    note("reduce", "binomial", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module, segsize, max_reqs);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_in_order_binary(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module, uint32_t segsize, int max_reqs);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_in_order_binary");
    note("reduce", "in_order_binary", count, dt, comm, segsize, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module, segsize, max_reqs);
    depth--;
    return rc;
}

int ompi_coll_base_reduce_intra_redscat_gather(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module) {
    static int (*fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, void *module);
    if (!fn) fn = real("ompi_coll_base_reduce_intra_redscat_gather");
    note("reduce", "redscat_gather", count, dt, comm, 0, -1);
    if (dry < 0) dry = getenv("COLLAT_RECORD_DRY") != NULL;
    if (dry) return MPI_SUCCESS;
    depth++;
    int rc = fn(sbuf, rbuf, count, dt, op, root, comm, module);
    depth--;
    return rc;
}
