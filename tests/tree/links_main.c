/* SPDX-License-Identifier: Apache-2.0 */
/* The entry point of each module's link check (CMakeLists.txt, gpool_module): the program
 * holds all of one module's objects and only the libraries it may use, so it links only
 * when the module calls nothing above its layer. It is never run. */
int main(void) { return 0; }
