/* kforge-sandbox-init: PID 1 of a verifier sample's PID namespace.
 *
 * The keeper (a child of a warm worker, outside the namespace: libs/verify/harness,
 * _enter_pid_namespace) starts it with posix_spawn right after unshare(CLONE_NEWPID), so making
 * the namespace's init copies nothing of the worker's address space (a fork of a worker that has
 * imported torch copies its page tables and then its pages as both touch them). It only reaps
 * the orphans of the namespace until the keeper kills it once the sample's process has ended;
 * the kernel then ends every process left in the namespace. Signals sent from inside the
 * namespace cannot end it: the kernel drops those for which an init has no handler, and it
 * installs none. It holds no descriptor but /dev/null on 0-2 (the keeper's file actions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_from(int first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0) return;
#endif
  for (int fd = first; fd < 65536; ++fd) close(fd);
}

int main(void) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  /* Ends with the keeper if it dies first (then the kernel ends the namespace's processes). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* Not traceable, its /proc entries not readable by the sample's uid. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  close_from(3);
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    int sig = 0;
    if (sigwait(&chld, &sig) != 0 && errno != EINTR) pause();
  }
}
