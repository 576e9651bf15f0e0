/* rwlock.pml - a Promela model of the reader-writer protocol of
 * lib/dir/rwlock.c (policy fair, with an intent holder that upgrades).
 *
 * Checked by `make verify-rw` (bench/rw.mk):
 *   spin -DCONFIG_SAFETY: 2 readers, 1 writer, 1 intent -> upgrade holder
 *     (W is a plain mutex between writers: exclusive.c);
 *     assertions (mutual exclusion) and invalid end states (deadlock).
 *   spin -DCONFIG_LIVE: 2 readers and 1 writer that all loop forever (a
 *     read attack and a write attack at once); under weak fairness
 *     (pan -a -f) neither side starves: LTL claims fair_reader, fair_writer.
 *
 * Mapping to the C code (lib/dir/rwlock.c unless named):
 *   wholder/wmode      D/NAME.lock and its owner record's mode (exclusive.c)
 *   up                 D/NAME.up.<T> of W's holder (upgrade creates it)
 *   rs[i]              reader i's entry in D/NAME.readers:
 *                      NONE, RANN = r.<T>, WAIT = w.<T>, ADM = a.<T>
 *   gen[i]             reader i's token (a new one at every acquire)
 *   BLOCKING           judge_w() == W_BLOCK
 *   Reader:  announce -> look -> (enter | withdraw -> wait -> peek ->
 *            re-announce -> look ...) = shared_acquire(); release =
 *            dl_rw_release() (unlink our entry).
 *   Writer:  take W = take_w() (one rename); first scan with admission and
 *            remembering = drain(admit) first dl_rw_scan(); later scans
 *            admit remembered readers that withdrew (admit_known); wait
 *            for RANN/ADM entries to go = the drain loop.
 *   Upgrader: intent_acquire() = take W in mode INTENT; dirlock_upgrade() =
 *            create U, then drain without admission; release = unlink U,
 *            then release W.
 * Each scan step reads one reader's slot atomically: readdir is not a
 * snapshot.  Not modelled: stale breaking (an entry of a dead process is
 * removed as if its owner had released it), FIFO order on W, timeouts.
 */

#define NONE 0
#define RANN 1
#define WAIT 2
#define ADM 3

#define FREE 0
#define EXCL 1
#define INTENT 2

#define NR 2

byte wholder = 0; /* 0: free, else the holder's id */
byte wmode = FREE;
bool up = false;
byte rs[NR];
bit gen[NR];
byte inR = 0;
bool inW = false;
bool rwant[NR];
bool rin[NR];
bool wwant = false;
bool win = false;

#define BLOCKING (wmode == EXCL || (wmode == INTENT && up))

proctype Reader(byte i)
{
        do
        :: atomic { rwant[i] = true; gen[i] = 1 - gen[i]; rs[i] = RANN }  /* announce: create r.<T> */
look:
           if
           :: !BLOCKING -> goto enter                    /* look at W: open */
           :: else -> rs[i] = WAIT                       /* withdraw: rename r -> w */
           fi;
waiting:
           if
           :: rs[i] == ADM -> goto enter                 /* admitted: a.<T> exists */
           :: !BLOCKING ->                               /* peek: W looks open */
              if
              :: atomic { rs[i] == WAIT -> rs[i] = RANN }; goto look  /* rename w -> r */
              :: rs[i] == ADM -> goto enter              /* ENOENT: admitted meanwhile */
              fi
           fi;
enter:
           atomic { inR++; rin[i] = true; rwant[i] = false };
           assert(!inW);
           atomic { inR--; rin[i] = false };
           rs[i] = NONE                                  /* release: unlink our entry */
        od
}

/* drain(): scan until no RANN/ADM is left.  With `admit`, the first scan
 * admits waiting readers and remembers every reader it saw (by token);
 * later scans admit remembered readers that withdrew. */
inline drain(admit)
{
        j = 0;
        do
        :: j < NR ->
           atomic {
                   known[j] = false;
                   if
                   :: admit && rs[j] == WAIT -> rs[j] = ADM; known[j] = true; kgen[j] = gen[j]
                   :: admit && rs[j] == RANN -> known[j] = true; kgen[j] = gen[j]
                   :: else
                   fi
           };
           j++
        :: else -> break
        od;
rescan:
        j = 0;
        do
        :: j < NR ->
           atomic {                                      /* one entry name, as readdir gives it */
                   if
                   :: rs[j] == WAIT && known[j] && kgen[j] == gen[j] -> rs[j] = ADM; busy = true
                   :: rs[j] == RANN || rs[j] == ADM -> busy = true
                   :: else -> busy = false
                   fi
           };
           if
           :: busy ->
              (rs[j] == NONE || rs[j] == WAIT);          /* wait for a change, scan again */
              goto rescan
           :: else -> j++
           fi
        :: else -> break
        od
}

proctype Writer(byte id)
{
        byte j;
        bool busy;
        bool known[NR];
        bit kgen[NR];
        do
        :: wwant = true;
           atomic { wholder == 0 -> wholder = id; wmode = EXCL };   /* take W */
           drain(true);
           atomic { inW = true; win = true; wwant = false };
           assert(inR == 0);
           atomic { inW = false; win = false };
           atomic { wholder = 0; wmode = FREE }                     /* release W */
        od
}

proctype Upgrader(byte id)
{
        byte j;
        bool busy;
        bool known[NR];
        bit kgen[NR];
        do
        :: atomic { wholder == 0 -> wholder = id; wmode = INTENT }; /* intent */
           up = true;                                               /* upgrade: create U */
           drain(false);
           inW = true;
           assert(inR == 0);
           inW = false;
           up = false;                                              /* release: unlink U */
           atomic { wholder = 0; wmode = FREE }                     /* release W */
        od
}

init
{
        atomic {
                run Reader(0);
                run Reader(1);
                run Writer(1);
#ifdef CONFIG_SAFETY
                run Upgrader(3);
#endif
        }
}

#ifdef CONFIG_LIVE
ltl fair_reader { [] (rwant[0] -> <> rin[0]) }
ltl fair_writer { [] (wwant -> <> win) }
#endif
