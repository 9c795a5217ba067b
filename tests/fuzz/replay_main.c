// SPDX-License-Identifier: MIT
/* Runs a libFuzzer entry point over files without libFuzzer: every file
 * named on the command line (directories are walked one level deep). Used
 * by ctest to replay the committed seed corpora and crash regressions in
 * the normal and sanitizer builds. The first argument is the target's seed
 * corpus: it must exist and hold at least one input, else the replay fails (a
 * renamed or lost corpus must not pass as "replayed 0 inputs"); the others
 * (crash regressions) may be absent. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int files = 0, fails = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR [REGRESSION_DIR...]\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            if (i == 1) {
                fprintf(stderr, "seed corpus %s is missing\n", argv[i]);
                fails++;
            }
            continue; /* a target without crash regressions has no such directory */
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            char **names = NULL;
            size_t nn = 0;
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                names = realloc(names, (nn + 1) * sizeof *names);
                names[nn++] = strdup(e->d_name);
            }
            if (d) closedir(d);
            for (size_t k = 0; k < nn; k++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
                fails += run_file(path);
                files++;
                free(names[k]);
            }
            free(names);
        } else {
            fails += run_file(argv[i]);
            files++;
        }
        if (i == 1 && files == 0) {
            fprintf(stderr, "seed corpus %s holds no input\n", argv[i]);
            fails++;
        }
    }
    printf("replayed %d inputs\n", files);
    return fails ? 1 : 0;
}
