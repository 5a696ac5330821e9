/*
 * `gantryctl tier`: what an operator sees and does of tiering copies.
 */
#pragma once

/* Runs `gantryctl tier SUBCOMMAND ...` (@argv after "tier"); returns the exit code. */
int gantry_tier_main(int argc, char **argv);
