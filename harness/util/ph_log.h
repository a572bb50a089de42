/* ph_log.h - the one logging family: levels, printf checking, stderr only.
 * Data goes to stdout through ordinary stdio; logs never do.  Every line is
 * escaped on its way out (ph_escape.h): a control byte in a name or message
 * is shown as \xNN, never sent to the terminal.  Thread-safe (one fprintf
 * per line). */
#ifndef PH_LOG_H
#define PH_LOG_H

/* What leads every line the harness prints on stderr. */
#define PH_LOG_PREFIX "profharness: "

enum ph_log_level { PH_LOG_ERROR = 0, PH_LOG_WARN, PH_LOG_INFO, PH_LOG_DEBUG };

void ph_log_set_level(enum ph_log_level level);
enum ph_log_level ph_log_get_level(void);
void ph_log(enum ph_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ph_warn(...) ph_log(PH_LOG_WARN, __VA_ARGS__)
#define ph_info(...) ph_log(PH_LOG_INFO, __VA_ARGS__)
#define ph_debug(...) ph_log(PH_LOG_DEBUG, __VA_ARGS__)

#endif
