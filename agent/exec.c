/*
 * exec.c - start the program `traceagent --exec` traces (see exec.h) and
 * reap it. fork + execvp, with a close-on-exec pipe carrying execvp's
 * errno back to the parent: EOF on the pipe means the exec succeeded.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/exec.h"

/* In the child: set the environment and exec; on failure send errno. */
static void __attribute__((noreturn))
child(char *const *argv, const struct exec_env *env, int wfd)
{
	int err;

	setenv("TRACECOLLECT_DIR", env->dir, 1);
	setenv("TC_FTRACE", env->tracer, 1);
	setenv("TC_FTRACE_WAIT_MS", EXEC_WAIT_MS_DEFAULT, 0);
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
	err = errno;
	if (write(wfd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

/* Read the child's exec errno; 0 when the pipe closed (exec worked). */
static int exec_result(int rfd)
{
	int err = 0;
	ssize_t n;

	do
		n = read(rfd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(err) ? -err : 0;
}

int exec_start(char *const *argv, const struct exec_env *env, pid_t *pid)
{
	int fds[2], ret, status;
	pid_t p;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	p = fork();
	if (p < 0) {
		ret = -errno;
		goto out;
	}
	if (p == 0)
		child(argv, env, fds[1]);
	close(fds[1]);
	fds[1] = -1;
	ret = exec_result(fds[0]);
	if (ret < 0)
		while (waitpid(p, &status, 0) < 0 && errno == EINTR)
			;
	else
		*pid = p;
out:
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return ret;
}

bool exec_reap(pid_t pid, int *status)
{
	int st;

	if (pid <= 0 || waitpid(pid, &st, WNOHANG) != pid)
		return false;
	*status = st;
	return true;
}

void exec_kill(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

const char *exec_describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %s",
			 sigabbrev_np(WTERMSIG(status)) ?
			 sigabbrev_np(WTERMSIG(status)) : "?");
	else
		snprintf(buf, len, "ended (wait status %#x)", status);
	return buf;
}
