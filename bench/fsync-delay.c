// Benchmark aid, not part of the API: adds FSYNC_DELAY_US microseconds to every fsync/fdatasync
// of the process it is preloaded into, to read submitLead against a disk slower than this VM's.
//   gcc -shared -fPIC -O2 -o /tmp/fsync-delay.so bench/fsync-delay.c -ldl
//   npm run bench -- --only=submitLead --child-env="LD_PRELOAD=/tmp/fsync-delay.so;FSYNC_DELAY_US=250"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
static int delay_us(void) { static int d = -1; if (d < 0) { const char *s = getenv("FSYNC_DELAY_US"); d = s ? atoi(s) : 0; } return d; }
int fsync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fsync"); int r = real(fd); if (delay_us()) usleep(delay_us()); return r; }
int fdatasync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fdatasync"); int r = real(fd); if (delay_us()) usleep(delay_us()); return r; }
