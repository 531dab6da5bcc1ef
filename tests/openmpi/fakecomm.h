/* A communicator that pretends to have P ranks, for the probes that call libmpi's internals
 * (topo.c, decide.c). The functions they call read only the communicator's size
 * (c_local_group->grp_proc_count) and the caller's rank (c_my_rank); a singleton MPI process has
 * one communicator of size 1, so the probes use private copies of MPI_COMM_WORLD and of its group
 * with the size and rank they want written in. Where those two fields sit in the (opaque)
 * structures is found at run time: a candidate offset is the right one when MPI_Comm_rank /
 * MPI_Group_size read back a value written there. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what) { fprintf(stderr, "%s\n", what); exit(2); }

enum { COMM_BYTES = 4096, GROUP_BYTES = 1024 };
static unsigned char comm[COMM_BYTES], group[GROUP_BYTES];
static int rank_off = -1, size_off = -1;

static void locate(void) {
    MPI_Group g;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    memcpy(comm, (void *)MPI_COMM_WORLD, COMM_BYTES);
    memcpy(group, (void *)g, GROUP_BYTES);
    int group_ptrs = 0;
    for (int off = 0; off + (int)sizeof(void *) <= COMM_BYTES; off += sizeof(void *))
        if (*(void **)(comm + off) == (void *)g) { *(void **)(comm + off) = group; group_ptrs++; }
    if (!group_ptrs) die("the communicator's group pointer was not found");
    for (int off = 0; off + 4 <= GROUP_BYTES && size_off < 0; off += 4) {
        int32_t keep = *(int32_t *)(group + off), got = -1;
        if (keep != 1) continue;
        *(int32_t *)(group + off) = 12345;
        if (MPI_Group_size((MPI_Group)group, &got) == MPI_SUCCESS && got == 12345) size_off = off;
        *(int32_t *)(group + off) = keep;
    }
    for (int off = 0; off + 4 <= COMM_BYTES && rank_off < 0; off += 4) {
        int32_t keep = *(int32_t *)(comm + off), got = -1;
        if (keep != 0) continue;
        *(int32_t *)(comm + off) = 12345;
        if (MPI_Comm_rank((MPI_Comm)comm, &got) == MPI_SUCCESS && got == 12345) rank_off = off;
        *(int32_t *)(comm + off) = keep;
    }
    if (size_off < 0 || rank_off < 0) die("the rank or size field was not found");
}

static void *as(int P, int rank) {
    int got_size = -1, got_rank = -1;
    *(int32_t *)(group + size_off) = P;
    *(int32_t *)(comm + rank_off) = rank;
    MPI_Comm_size((MPI_Comm)comm, &got_size);
    MPI_Comm_rank((MPI_Comm)comm, &got_rank);
    if (got_size != P || got_rank != rank) die("the fake communicator does not read back");
    return comm;
}

