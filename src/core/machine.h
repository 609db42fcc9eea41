// This machine's share of a job: the CPUs it has online and the ranks the MPI launcher started on it (from
// the launcher's environment; OpenMPI's and MPICH's names). More ranks than CPUs means ranks take turns on
// a core, so a rank's wall-clock idle time also holds its waits for a CPU (the comm engine yields then; a
// pipeline picture says so). Leaves out: CPU affinity masks and cgroup quotas.
#pragma once

namespace shardlab {

int online_cpus();           // sysconf(_SC_NPROCESSORS_ONLN); 0 when unknown
int launcher_local_ranks();  // ranks on this machine as the launcher says; 0 when not told (no mpirun)

}  // namespace shardlab
