/* Preloaded into the JVM (javac and java) in the sandbox: socket() fails with EACCES.
 *
 * A JVM asks for sockets on its own: loading libnet (which every NIO file
 * channel does) probes IPv4 and IPv6 support with socket(AF_INET, ...), which
 * the sandbox's seccomp filter answers by killing the process. Through libc
 * the JVM gets the refusal it already handles; a program that reaches the
 * system call another way is still killed. Public and task-independent: built
 * once into the toolchain cache.
 */
#include <errno.h>

int socket(int domain, int type, int protocol) {
    (void)domain;
    (void)type;
    (void)protocol;
    errno = EACCES;
    return -1;
}
