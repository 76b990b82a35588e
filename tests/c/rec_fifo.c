/* A traced program that replaces the files the recorder made for it with FIFOs: its process
 * file and its main thread's file, found from SCALPEL_DIR. The recorder must not hang opening
 * them when the recording ends (tests/tests/attack_recorder.rs).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static int plant(const char *path) {
    return unlink(path) == 0 && mkfifo(path, 0600) == 0;
}

int main(void) {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    const char *dir = getenv("SCALPEL_DIR");
    if (!dir) return 2;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%d.", (int)getpid());
    DIR *d = opendir(dir);
    if (!d) return 3;
    int planted = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        snprintf(path, sizeof path, "%s/%s/process.trace", dir, e->d_name);
        planted += plant(path);
        snprintf(path, sizeof path, "%s/%s/t%d.trace", dir, e->d_name, (int)getpid());
        planted += plant(path);
    }
    closedir(d);
    printf("planted %d\n", planted);
    return 0;
}
