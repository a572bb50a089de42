// The Node service of the language test project (Debian bookworm's
// nodejs, 18).  A round runs from the event loop (setImmediate), so no
// long-running loop around the two calls is compiled with them inlined:
// each one's own loop is where the time is.
'use strict';

const UNIT = 2000000;
let sink = 0;

function hot_seventy_five(x, units) {
  for (let i = 0; i < units * UNIT; i++)
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
  return x;
}

function cool_twenty_five(x, units) {
  for (let i = 0; i < units * UNIT; i++)
    x = (Math.imul(x, 1664525) + 1013904223) & 0x7fffffff;
  return x;
}

// Four rounds a turn of the loop: the loop's own cost (a turn, its
// garbage) stays well under a per cent of the work.
let round = 0;
function tick() {
  for (let i = 0; i < 4; i++) {
    round++;
    sink = hot_seventy_five(sink + 1, 3);
    sink = cool_twenty_five(sink, 1);
    if (round % 50 === 0)
      console.log(`lang: ${round} rounds`);
  }
  setImmediate(tick);
}
tick();
