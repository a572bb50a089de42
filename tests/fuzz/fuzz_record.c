/* fuzz_record.c - the completion record reader on any file content: it
 * never crashes, never accepts more than PH_RECORD_MAX bytes, and what it
 * accepts passes ph_run_record_check; the sentence stop tells of what it
 * accepts is bounded, terminated and free of control characters. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_run_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int dirfd = -1;
    static char dir[] = "/tmp/fuzz-record-XXXXXX";
    char problem[256];
    json_t *rec = NULL;
    int fd, rc;

    if (dirfd < 0) {
        if (mkdtemp(dir) == NULL)
            abort();
        dirfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dirfd < 0)
            abort();
    }
    fd = openat(dirfd, "ph-exit.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
        abort();
    close(fd);
    rc = ph_run_record_read(dirfd, "ph-exit.json", &rec, problem, sizeof problem);
    if (rc == 0) {
        char story[256];
        int lv;

        if (rec == NULL || size > PH_RECORD_MAX || ph_run_record_check(rec, problem, sizeof problem) != 0)
            abort();
        memset(story, 'Z', sizeof story);
        lv = ph_run_record_story(rec, "x.log", story, sizeof story);
        if (lv < -1 || lv > 1 || memchr(story, '\0', sizeof story) == NULL || (lv == -1 && story[0] != '\0'))
            abort();
        for (const char *p = story; *p; p++)
            if ((unsigned char)*p < ' ' || *p == 0x7f)
                abort();
        json_decref(rec);
    } else if (rec != NULL || problem[0] == '\0') {
        abort();
    }
    return 0;
}
