/* A C program on the static library: a C-only project links
 * madengine::madengine_static with its C linker (the library's C++ runtime
 * comes through the target's interface). Creates a sim node and asks it a
 * question, through the C ABI alone. */
#include <madengine/madengine.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  const char* v = me_version();
  if (v == NULL || strlen(v) == 0) return 1;
  char err[256];
  me_node* node = me_node_create("[transport]\nkind = \"sim\"\ngenerate = \"ft2:4\"\n[engine]\ncores = 1\npin = false\n",
                                 err, sizeof err);
  if (node == NULL) {
    fprintf(stderr, "consumer_c: %s\n", err);
    return 1;
  }
  struct me_path p;
  const int rc = me_path_query(node, 1, 2, &p); /* not started: no subnet yet */
  me_node_destroy(node);
  if (rc != ME_ERR_NO_SUBNET) {
    fprintf(stderr, "consumer_c: me_path_query gave %d\n", rc);
    return 1;
  }
  printf("consumer_c: libmadengine %s from C, statically\n", v);
  return 0;
}
