/* Dump the trees that libmpi's own topology builders (ompi/mca/coll/base/coll_base_topo.c) make,
 * for every communicator size P in [PMIN, PMAX], the roots given, and every rank.
 *
 * The builders read only the communicator's size and the caller's rank: fakecomm.h gives a
 * communicator that says what it is told.
 *
 * Output, one line per (builder, P, root, rank): "<builder> <P> <root> <rank> <parent> : <children>",
 * parent -1 for the tree's root, children in the order the builder lists them.
 * Usage: topo PMIN PMAX ROOT... (a root r is taken modulo P; "last" means P - 1).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {          /* ompi_coll_tree_t of OpenMPI 4.1.x (flexible array of children) */
    int32_t tree_root, tree_fanout, tree_bmtree, tree_prev, tree_nextsize;
    int32_t tree_next[];
} tree_t;

extern tree_t *ompi_coll_base_topo_build_tree(int fanout, void *comm, int root);
extern tree_t *ompi_coll_base_topo_build_chain(int fanout, void *comm, int root);
extern tree_t *ompi_coll_base_topo_build_bmtree(void *comm, int root);
extern tree_t *ompi_coll_base_topo_build_in_order_bmtree(void *comm, int root);
extern tree_t *ompi_coll_base_topo_build_kmtree(void *comm, int root, int radix);
extern tree_t *ompi_coll_base_topo_build_in_order_bintree(void *comm);

#include "fakecomm.h"

static void dump(const char *name, int P, int root, int rank, tree_t *t) {
    if (!t) { printf("%s %d %d %d failed\n", name, P, root, rank); return; }
    int parent = (rank == t->tree_root) ? -1 : t->tree_prev;
    printf("%s %d %d %d %d :", name, P, root, rank, parent);
    for (int i = 0; i < t->tree_nextsize; i++) printf(" %d", t->tree_next[i]);
    printf("\n");
    free(t);
}

int main(int argc, char **argv) {
    if (argc < 4) die("usage: topo PMIN PMAX ROOT...");
    int pmin = atoi(argv[1]), pmax = atoi(argv[2]);
    MPI_Init(&argc, &argv);
    locate();
    for (int P = pmin; P <= pmax; P++)
        for (int a = 3; a < argc; a++) {
            int root = strcmp(argv[a], "last") == 0 ? P - 1 : atoi(argv[a]) % P;
            for (int r = 0; r < P; r++) {
                dump("tree2", P, root, r, ompi_coll_base_topo_build_tree(2, as(P, r), root));
                dump("chain4", P, root, r, ompi_coll_base_topo_build_chain(4, as(P, r), root));
                dump("chain1", P, root, r, ompi_coll_base_topo_build_chain(1, as(P, r), root));
                dump("bmtree", P, root, r, ompi_coll_base_topo_build_bmtree(as(P, r), root));
                dump("in_order_bmtree", P, root, r, ompi_coll_base_topo_build_in_order_bmtree(as(P, r), root));
                dump("kmtree4", P, root, r, ompi_coll_base_topo_build_kmtree(as(P, r), root, 4));
                if (a == 3) { /* the in-order binary tree ignores the root */
                    tree_t *t = ompi_coll_base_topo_build_in_order_bintree(as(P, r));
                    dump("in_order_bintree", P, t ? t->tree_root : -1, r, t);
                }
            }
        }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
