// Module ids by order of use, not by a hash of the module's identifier: the federated container's
// entry is identified by absolute paths of the build machine, which made the shipped assets depend
// on where the repository was checked out. With these, a build anywhere gives the same bytes
// (tests/lab/test_frontend.py checks it).
module.exports = {
  optimization: {
    moduleIds: 'natural',
    chunkIds: 'natural'
  }
};
