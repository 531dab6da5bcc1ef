"""The shapes OpenMPI 4.1 runs: its trees, its schedules of partial messages, and its ids, fixed
decision rules and fall-backs (shared by every mode and by the selection stage)."""
