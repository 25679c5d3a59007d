/*
 * exec.h - `traceagent --exec -- PROG ARGS`: start the program to trace
 * with the environment that makes libtracecollect create its ring buffer
 * where the agent looks (TRACECOLLECT_DIR) and start its function tracer
 * (TC_FTRACE, TC_FTRACE_WAIT_MS), then learn when and how it ended.
 * Prefix exec_.
 *
 * The program must be linked with libtracecollect (it is a static library)
 * and built with -pg, -pg -mfentry or -finstrument-functions for function
 * events; without the runtime it simply runs untraced.
 */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

#define EXEC_WAIT_MS_DEFAULT	"10000"	/* TC_FTRACE_WAIT_MS unless set */

struct exec_env {
	const char *dir;	/* TRACECOLLECT_DIR: the agent's --user-dir */
	const char *tracer;	/* TC_FTRACE: function or function_graph */
};

/*
 * exec_start - fork and execvp(@argv[0], @argv) with @env added to the
 * environment (TC_FTRACE_WAIT_MS too, unless the caller's environment has
 * it). A program that cannot be executed is reported here, not as an exit
 * status: the child hands execvp's errno back through a close-on-exec
 * pipe.
 *
 * Return: 0 and *@pid; -errno from fork/pipe or from execvp (-ENOENT for
 * a missing program, -EACCES, ...). *@pid only on success.
 */
int exec_start(char *const *argv, const struct exec_env *env, pid_t *pid);

/*
 * exec_reap - whether @pid ended (waitpid without blocking); on true,
 * *@status holds its wait status.
 */
bool exec_reap(pid_t pid, int *status);

/*
 * exec_kill - end @pid (SIGTERM, then wait for it) when the agent stops
 * before the program did. Safe with pid <= 0.
 */
void exec_kill(pid_t pid);

/*
 * exec_describe - "exited with status N" or "killed by signal NAME" for
 * the wait status @status, in @buf of @len bytes. Return: @buf.
 */
const char *exec_describe(int status, char *buf, size_t len);

#endif
