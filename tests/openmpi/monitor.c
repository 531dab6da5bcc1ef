/* One MPI_Bcast or MPI_Reduce rooted at rank 0 (MPI_SIGNED_CHAR, MPI_SUM), or one MPI_Barrier:
 * argv[1] bcast|reduce|barrier, argv[2] the message size in bytes (unused by the barrier). Run under mpirun with --mca pml_monitoring_enable 2,
 * --mca pml_monitoring_enable_output 3 and --mca pml_monitoring_filename PREFIX: OpenMPI's pml
 * monitoring component then writes, at MPI_Finalize, PREFIX.<rank>.prof with one
 * "I <rank> <peer> <bytes> bytes <n> msgs sent" line per peer the rank sent internal (collective)
 * messages to. Written for collat's message-level conformance test (tests/test_openmpi.py). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int bytes = atoi(argv[2]);
    signed char *buf = calloc(bytes > 0 ? bytes : 1, 1), *out = calloc(bytes > 0 ? bytes : 1, 1);
    if (strcmp(argv[1], "barrier") == 0)
        MPI_Barrier(MPI_COMM_WORLD);
    else if (strcmp(argv[1], "reduce") == 0)
        MPI_Reduce(buf, out, bytes, MPI_SIGNED_CHAR, MPI_SUM, 0, MPI_COMM_WORLD);
    else
        MPI_Bcast(buf, bytes, MPI_SIGNED_CHAR, 0, MPI_COMM_WORLD);
    free(buf);
    free(out);
    MPI_Finalize();
    return 0;
}
