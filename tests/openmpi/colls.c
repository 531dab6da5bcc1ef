/* One MPI_Bcast and one MPI_Reduce (MPI_SUM on MPI_CHAR, root 0, as OSU 7.3 runs them) for every
 * communicator size P = 2 .. the world's size and every message size in bytes given on the command
 * line. The communicator of size P is split off the world (ranks 0 .. P-1), so coll/tuned chooses
 * afresh for it, from the dynamic rules file when one is given, else from its fixed rules. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long largest = 1;
    for (int a = 1; a < argc; a++) if (atol(argv[a]) > largest) largest = atol(argv[a]);
    char *sbuf = calloc(largest, 1), *rbuf = calloc(largest, 1);
    for (int P = 2; P <= world; P++) {
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, rank < P ? 0 : MPI_UNDEFINED, rank, &sub);
        if (sub != MPI_COMM_NULL) {
            for (int a = 1; a < argc; a++) {
                int count = atoi(argv[a]);
                MPI_Bcast(sbuf, count, MPI_CHAR, 0, sub);
                MPI_Reduce(sbuf, rbuf, count, MPI_CHAR, MPI_SUM, 0, sub);
            }
            MPI_Comm_free(&sub);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
