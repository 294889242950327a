! SPDX-License-Identifier: LGPL-2.1-or-later
! usempi.f90 - the Fortran `use mpi` bindings over libzcrecv-mpi: rank 0
! sends from Fortran with a persistent request what rank 1 receives in C
! (cside, mixed_c.c), and takes what rank 1 sends from C with a matched
! probe; every rank then passes a value round a ring with mpi_isend,
! mpi_irecv and mpi_waitsome, then mpi_testany finds nothing left. A Fortran call that missed the layer would
! leave the C side waiting (the job times out) or take the wrong message.
program usempi
  use mpi
  implicit none
  integer :: rank, nproc, ierr, st(MPI_STATUS_SIZE), buf(100), i, n
  integer :: req, msg, reqs(2), sts(MPI_STATUS_SIZE, 2), left, right
  integer :: mine, got, ndone, outcnt, idxs(2), k, src
  logical :: flag
  external cside
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nproc, ierr)
  if (rank == 0) then
    do i = 1, 100
      buf(i) = i
    end do
    call mpi_send_init(buf, 100, MPI_INTEGER, 1, 11, MPI_COMM_WORLD, &
                       req, ierr)
    call mpi_start(req, ierr)
    call mpi_wait(req, st, ierr)
    call mpi_request_free(req, ierr)
    call mpi_mprobe(MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, msg, st, ierr)
    call mpi_get_count(st, MPI_INTEGER, n, ierr)
    buf = 0
    call mpi_mrecv(buf, 100, MPI_INTEGER, msg, st, ierr)
    if (n /= 50 .or. buf(50) /= 100 .or. st(MPI_SOURCE) /= 1 .or. &
        msg /= MPI_MESSAGE_NULL) then
      print *, 'usempi: wrong', n, buf(50), st(MPI_SOURCE)
      call mpi_abort(MPI_COMM_WORLD, 3, ierr)
    end if
    print *, 'usempi: persistent and matched probe ok'
  else if (rank == 1) then
    call cside()
  end if
  right = mod(rank + 1, nproc)
  left = mod(rank + nproc - 1, nproc)
  mine = 1000 + rank
  got = -1
  call mpi_irecv(got, 1, MPI_INTEGER, left, 13, MPI_COMM_WORLD, reqs(1), ierr)
  call mpi_isend(mine, 1, MPI_INTEGER, right, 13, MPI_COMM_WORLD, reqs(2), &
                 ierr)
  ndone = 0
  src = -1
  do while (ndone < 2)
    call mpi_waitsome(2, reqs, outcnt, idxs, sts, ierr)
    do k = 1, outcnt
      if (idxs(k) == 1) src = sts(MPI_SOURCE, k)
    end do
    ndone = ndone + outcnt
  end do
  call mpi_testany(2, reqs, k, flag, st, ierr)
  if (.not. flag .or. k /= MPI_UNDEFINED) then
    print *, 'usempi: testany', flag, k
    call mpi_abort(MPI_COMM_WORLD, 5, ierr)
  end if
  if (got /= 1000 + left .or. src /= left) then
    print *, 'usempi: ring wrong', rank, got
    call mpi_abort(MPI_COMM_WORLD, 4, ierr)
  end if
  call mpi_reduce(got, n, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print *, 'usempi: ring sum', n
  call mpi_finalize(ierr)
end program usempi
