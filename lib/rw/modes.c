/* modes.c - THE MODE TABLE: which held mode keeps which wanted mode out,
 * for every backend (modes.h says who reads it).  Exclusive keeps
 * everything out and shared only exclusive; two intents exclude each
 * other (each may become exclusive), an intent and readers do not.  An
 * upgrading intent holder keeps every newcomer out, readers included,
 * while the readers already in drain; as a request it is an intent, so
 * its column is intent's (readers in do not keep it out: it waits for
 * them itself, by the backend's own upgrade protocol). */
#include "modes.h"

static const struct {
        const char *name;
        char letter;
        bool keeps_out[DL_MODE_COUNT]; /* a request in each mode, by number */
} modes[DL_MODE_COUNT] = {
    /*                                                keeps out: exclusive shared intent upgrading */
    [DL_MODE_EXCLUSIVE] = {"exclusive", DL_MODE_LETTER_EXCLUSIVE, {true, true, true, true}},
    [DL_MODE_SHARED] = {"shared", DL_MODE_LETTER_SHARED, {true, false, false, false}},
    [DL_MODE_INTENT] = {"intent", DL_MODE_LETTER_INTENT, {true, false, true, true}},
    [DL_MODE_UPGRADING] = {"upgrading", DL_MODE_LETTER_UPGRADING, {true, true, true, true}},
};

static bool is_mode(int mode)
{
        return mode >= 0 && mode < DL_MODE_COUNT;
}

bool dl_modes_conflict(int held, int want)
{
        return !is_mode(held) || !is_mode(want) || modes[held].keeps_out[want];
}

int dl_mode_under_policy(int mode, int policy)
{
        return policy == DIRLOCK_POLICY_SIMPLE ? DL_MODE_EXCLUSIVE : mode;
}

char dl_mode_letter(int mode)
{
        return is_mode(mode) ? modes[mode].letter : '\0';
}

int dl_mode_of_letter(char letter)
{
        for (int m = 0; m < DL_MODE_COUNT; m++)
                if (letter != '\0' && modes[m].letter == letter)
                        return m;
        return -1;
}

const char *dirlock_mode_name(int mode)
{
        return is_mode(mode) ? modes[mode].name : "?";
}
