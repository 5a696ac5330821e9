/*
 * `gantryctl dhchap`: the target side of a DH-HMAC-CHAP key rotation.
 */
#pragma once

/* Runs `gantryctl dhchap SUBCOMMAND ...` (@argv after "dhchap"); returns the exit code. */
int gantry_dhchap_main(int argc, char **argv);
