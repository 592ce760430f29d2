/* pause.c - the sandbox ("pause") process of the test cluster's real nodes
 * (hack/cluster up --real-nodes): holds the pod's namespaces, reaps the
 * zombies it inherits, and exits on SIGINT/SIGTERM. Built static by
 * hack/cluster.d/nodes.sh into a FROM-scratch image; no registry needed. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { _exit(sig == SIGTERM ? 0 : 2); }

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0)
    return 1;
  for (;;)
    pause();
}
