// Benchmark aid, not part of the API: adds FSYNC_DELAY_US microseconds to every fsync/fdatasync
// of the process it is preloaded into, to read submitLead against a disk slower than this VM's.
//   gcc -shared -fPIC -O2 -o /tmp/fsync-delay.so bench/fsync-delay.c -ldl
//   npm run bench -- --only=submitLead --child-env="LD_PRELOAD=/tmp/fsync-delay.so;FSYNC_DELAY_US=250"
// With FSYNC_DELAY_SAY set, each delayed fsync first writes a line to stderr (the test of the SQLite
// writer, test/system/sqlite-writer.test.ts, waits for it instead of guessing when a commit waits).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
static int delay_us(void) { static int d = -1; if (d < 0) { const char *s = getenv("FSYNC_DELAY_US"); d = s ? atoi(s) : 0; } return d; }
static void delay(void) {
  static int say = -1;
  if (!delay_us()) return;
  if (say < 0) say = getenv("FSYNC_DELAY_SAY") != NULL;
  if (say) { static const char line[] = "fsync-delay: waiting\n"; ssize_t w = write(2, line, sizeof line - 1); (void)w; }
  usleep(delay_us());
}
int fsync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fsync"); int r = real(fd); delay(); return r; }
int fdatasync(int fd) { static int (*real)(int); if (!real) real = dlsym(RTLD_NEXT, "fdatasync"); int r = real(fd); delay(); return r; }
