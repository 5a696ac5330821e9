/*
 * `gantryctl sim`: the command line of the placement simulator.
 */
#pragma once

/* The whole subcommand: argv after "sim". Returns the process exit code. */
int gantry_sim_main(int argc, char **argv);
