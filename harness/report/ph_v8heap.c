/* ph_v8heap.c - V8's sampling heap profile as folded stacks (ph_v8heap.h).
 * The tree walked without recursion: an explicit stack of (node, next
 * child) pairs, as deep as the cap. */
#include "ph_v8heap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The frame name of NODE's callFrame into OUT (CAP bytes). */
static size_t
frame_name(const json_t *node, char *out, size_t cap)
{
    const json_t *cf = json_object_get(node, "callFrame");
    const char *fn = json_string_value(json_object_get(cf, "functionName"));
    const char *url = json_string_value(json_object_get(cf, "url"));
    json_int_t line = json_integer_value(json_object_get(cf, "lineNumber"));
    size_t n;

    if (fn == NULL || fn[0] == '\0')
        fn = "(anonymous)";
    if (url != NULL && url[0] != '\0' && line >= 0)
        n = (size_t)snprintf(out, cap, "%s (%s:%lld)", fn, url, (long long)line + 1);
    else if (url != NULL && url[0] != '\0')
        n = (size_t)snprintf(out, cap, "%s (%s)", fn, url);
    else
        n = (size_t)snprintf(out, cap, "%s", fn);
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            out[i] = '?';
    return n;
}

int
ph_v8heap_fold(const json_t *profile, ph_folded *into, ph_v8heap_info *info, ph_error_t *err)
{
    struct {
        const json_t *node;
        size_t next;
    } st[PH_V8HEAP_MAX_DEPTH];
    uint32_t ids[PH_V8HEAP_MAX_DEPTH];
    const json_t *head = json_object_get(profile, "head");
    const json_t *samples = json_object_get(profile, "samples");
    size_t depth = 0;

    memset(info, 0, sizeof *info);
    if (!json_is_object(head) || !json_is_array(json_object_get(head, "children")))
        return ph_bad_input(err, "not a V8 heap profile (no `head` call-tree node)");
    info->samples = json_is_array(samples) ? json_array_size(samples) : 0;
    /* the root, `(root)`, is no frame: its children are the stacks' roots */
    st[0].node = head;
    st[0].next = 0;
    depth = 1;
    while (depth > 0) {
        const json_t *kids = json_object_get(st[depth - 1].node, "children");
        const json_t *kid = json_array_get(kids, st[depth - 1].next);
        char name[PH_V8HEAP_MAX_NAME];
        int64_t id;
        double self;

        if (kid == NULL) {
            depth--;
            continue;
        }
        st[depth - 1].next++;
        if (!json_is_object(kid))
            continue;
        info->nodes++;
        self = json_number_value(json_object_get(kid, "selfSize"));
        if (depth == PH_V8HEAP_MAX_DEPTH) {
            /* too deep: its own bytes on its parent's frame, its
             * subtree not read */
            info->cut++;
            if (self > 0) {
                info->bytes += self;
                if (ph_folded_add(into, ids, (uint32_t)depth - 1, self, err) < 0)
                    return -1;
            }
            continue;
        }
        size_t n = frame_name(kid, name, sizeof name);

        if ((id = ph_folded_intern(into, name, n, err)) < 0)
            return -1;
        ids[depth - 1] = (uint32_t)id;
        if (self > 0) {
            info->bytes += self;
            if (ph_folded_add(into, ids, (uint32_t)depth, self, err) < 0)
                return -1;
        }
        st[depth].node = kid;
        st[depth].next = 0;
        depth++;
    }
    return 0;
}
