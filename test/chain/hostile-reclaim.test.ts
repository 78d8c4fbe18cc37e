// The borrower's reclaimJob (outsider29) against a borrower that re-enters (review34's open point: the hostile-token
// test of facility-v2.test.ts drives the client's reclaim only, and re-enters as the token, not as the borrower). The
// borrower here is a contract, and the token calls its recipient back on each transfer (an ERC-777-like hook): when
// reclaimJob pays the collateral out, the borrower re-enters the credit contract as itself (the job's borrower), the
// reclaim of the same job or another job's, and either lets its revert bubble (the token's transfer fails) or swallows
// it. Neither may have it take its collateral twice, nor take the client's escrow: the escrow goes to the client, the
// collateral once to the borrower (paid, or held for it and claimed once). Direct calls on anvil.
import t from 'tap'
import { encodeFunctionData, toFunctionSelector, type Abi, type Address, type Hex } from 'viem'
import { creditFacilityV2Abi } from '../../src/chain/artifacts.ts'
import { legacyJobKey as jobKeyOf } from '../../src/chain/ids.ts'
import { toContractRevert } from '../../src/chain/operator.ts'
import { compileSolidity, JobStatus, rejectsWith, setupFacilityV2, USDC, type V2Fixture, type Wallet } from './fixtures/facility-v2.ts'

const reclaimDelaySeconds = 1_000n
let f: V2Fixture

t.before(async () => {
  f = await setupFacilityV2(t, { reclaimDelaySeconds })
})

/** An ERC-20 that calls a hooked recipient's onTokenTransfer(from, value) after each transfer to it, bubbling its revert. */
const hookTokenSource = `
// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;
contract HookToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => bool) public hooked;
    function setHooked(address account, bool on) external { hooked[account] = on; }
    function mint(address to, uint256 value) external { balanceOf[to] += value; }
    function approve(address spender, uint256 value) external returns (bool) { allowance[msg.sender][spender] = value; return true; }
    function transfer(address to, uint256 value) external returns (bool) {
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        _hook(msg.sender, to, value);
        return true;
    }
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        allowance[from][msg.sender] -= value;
        balanceOf[from] -= value;
        balanceOf[to] += value;
        _hook(from, to, value);
        return true;
    }
    function _hook(address from, address to, uint256 value) private {
        if (!hooked[to]) return;
        (bool ok, bytes memory data) = to.call(abi.encodeWithSignature("onTokenTransfer(address,uint256)", from, value));
        if (!ok) assembly { revert(add(data, 32), mload(data)) }
    }
}
`

/**
 * A borrower that is a contract: it calls what its owner asks (exec), and, armed, re-enters the credit contract once
 * from the token's hook with `payload`: mode 1 lets a refusal bubble (the transfer to it fails), mode 2 swallows it
 * (keeping the revert data). `taken` counts re-entries the credit contract accepted.
 */
const borrowerSource = `
// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.26;
contract ReclaimingBorrower {
    address public facility;
    bytes public payload;
    uint8 public mode;
    uint256 public taken;
    bytes public lastRevert;
    constructor(address facility_) { facility = facility_; }
    function exec(address target, bytes calldata data) external returns (bytes memory) {
        (bool ok, bytes memory result) = target.call(data);
        if (!ok) assembly { revert(add(result, 32), mload(result)) }
        return result;
    }
    function arm(bytes calldata payload_, uint8 mode_) external { payload = payload_; mode = mode_; }
    function onTokenTransfer(address, uint256) external {
        uint8 m = mode;
        if (m == 0) return;
        mode = 0;
        (bool ok, bytes memory data) = facility.call(payload);
        if (ok) { taken += 1; return; }
        if (m == 1) assembly { revert(add(data, 32), mload(data)) }
        lastRevert = data;
    }
}
`

type Hostile = { asset: Address; token: { abi: Abi }; borrower: Address; abi: Abi; owner: Wallet }

async function hostileBorrower(): Promise<Hostile> {
  const token = compileSolidity('HookToken', hookTokenSource)
  const contract = compileSolidity('ReclaimingBorrower', borrowerSource)
  const asset = await f.deploy(token.abi, token.bytecode, [])
  const borrower = await f.deploy(contract.abi, contract.bytecode, [f.facility])
  const owner = await f.wallet()
  const send = async (address: Address, abi: Abi, functionName: string, args: readonly unknown[]) => {
    const hash = await owner.wallet.writeContract({ address, abi, functionName, args })
    const receipt = await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    if (receipt.status !== 'success') throw new Error(`${functionName} reverted`)
  }
  await send(asset, token.abi, 'mint', [borrower, 1_000n * USDC])
  const h: Hostile = { asset, token, borrower, abi: contract.abi, owner }
  await borrowerExec(h, asset, encodeFunctionData({ abi: token.abi, functionName: 'approve', args: [f.facility, 1_000n * USDC] }))
  await send(asset, token.abi, 'setHooked', [borrower, true])
  return h
}

/** The borrower contract calls `target` with `data` (its owner sends it); throws the credit contract's error on a revert. */
async function borrowerExec(h: Hostile, target: Address, data: Hex): Promise<Hex> {
  let request
  try {
    ;({ request } = await f.publicClient.simulateContract({
      account: h.owner.account, address: h.borrower, abi: [...h.abi, ...creditFacilityV2Abi.filter((item) => item.type === 'error')], functionName: 'exec', args: [target, data],
    } as Parameters<typeof f.publicClient.simulateContract>[0]))
  } catch (error) {
    throw toContractRevert(f.network.slug, error)
  }
  const hash = await h.owner.wallet.writeContract(request as Parameters<typeof h.owner.wallet.writeContract>[0])
  const receipt = await f.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  if (receipt.status !== 'success') throw new Error(`exec ${hash} reverted`)
  return hash
}

const facilityCall = (functionName: string, args: readonly unknown[]) =>
  encodeFunctionData({ abi: creditFacilityV2Abi, functionName, args } as Parameters<typeof encodeFunctionData>[0])

/** A job of `escrow` for the hostile borrower, funded by a fresh client, with `collateral` posted by the borrower. */
async function jobOf(h: Hostile, name: string, escrow: bigint, collateral: bigint): Promise<{ jobKey: Hex; client: Wallet }> {
  const client = await f.wallet(escrow, h.asset)
  const jobKey = jobKeyOf(name)
  await f.call(client, 'fundJob', [jobKey, h.asset, escrow, h.borrower])
  await borrowerExec(h, f.facility, facilityCall('postCollateral', [jobKey, h.asset, collateral]))
  f.jobKeys.add(jobKey)
  return { jobKey, client }
}

const read = <T>(h: Hostile, functionName: string): Promise<T> => f.publicClient.readContract({ address: h.borrower, abi: h.abi, functionName }) as Promise<T>

t.test('a borrower re-entering its own reclaim from the collateral transfer takes its collateral once, never the escrow', async (t) => {
  const h = await hostileBorrower()
  const first = await jobOf(h, 'job_hostile_reclaim_1', 100n * USDC, 40n * USDC)
  const other = await jobOf(h, 'job_hostile_reclaim_2', 50n * USDC, 10n * USDC)
  const third = await jobOf(h, 'job_hostile_reclaim_3', 30n * USDC, 5n * USDC)
  await f.advanceTime(Number(reclaimDelaySeconds))
  const held = () => f.held(h.borrower, h.asset)
  const borrowerBefore = await f.balance(h.borrower, h.asset)

  // The reclaim of the same job again, its refusal bubbling: the transfer to the borrower fails, so the contract holds
  // the collateral for it (pull over push); the client's escrow went out before.
  await h.owner.wallet.writeContract({ address: h.borrower, abi: h.abi, functionName: 'arm', args: [facilityCall('reclaimJob', [first.jobKey]), 1] }).then((hash) => f.publicClient.waitForTransactionReceipt({ hash }))
  const reclaimed = await borrowerExec(h, f.facility, facilityCall('reclaimJob', [first.jobKey]))
  const events = await f.events(reclaimed)
  t.same(events.filter((e) => e.eventName === 'JobReclaimed').length, 1, 'one reclaim')
  t.ok(events.some((e) => e.eventName === 'PaymentHeld'), 'the collateral transfer the re-entry made fail is held for the borrower')
  t.equal(await f.balance(first.client.account.address, h.asset), 100n * USDC, 'the client has its escrow back, whole')
  t.equal(await f.balance(h.borrower, h.asset), borrowerBefore, 'the borrower took nothing by the re-entry')
  t.equal(await held(), 40n * USDC, 'its collateral, once, held for it')
  t.equal(await read<bigint>(h, 'taken'), 0n, 'no re-entered call was accepted')
  t.match(await f.job(first.jobKey), { status: JobStatus.Reclaimed, escrow: 0n, collateral: 0n })
  await rejectsWith(t, borrowerExec(h, f.facility, facilityCall('reclaimJob', [first.jobKey])), 'JobNotOpen', 'a second reclaim of the job is refused')

  // Another job of the same borrower reclaimed from the hook, the refusal swallowed: the transfer goes through, the
  // collateral paid once, the other job untouched (the guard refuses the nested call).
  const swallowed = async (payload: Hex, job: { jobKey: Hex; client: Wallet }, escrow: bigint, collateral: bigint) => {
    await h.owner.wallet.writeContract({ address: h.borrower, abi: h.abi, functionName: 'arm', args: [payload, 2] }).then((hash) => f.publicClient.waitForTransactionReceipt({ hash }))
    const before = await f.balance(h.borrower, h.asset)
    await borrowerExec(h, f.facility, facilityCall('reclaimJob', [job.jobKey]))
    t.equal((await f.balance(h.borrower, h.asset)) - before, collateral, 'the borrower is paid its collateral once')
    t.equal(await f.balance(job.client.account.address, h.asset), escrow, 'the client its escrow')
    t.equal(await read<bigint>(h, 'taken'), 0n, 'the re-entered call was refused')
    t.equal((await read<Hex>(h, 'lastRevert')).slice(0, 10), toFunctionSelector('ReentrancyGuardReentrantCall()'), 'by the reentrancy guard')
  }
  await swallowed(facilityCall('reclaimJob', [third.jobKey]), other, 50n * USDC, 10n * USDC)
  t.match(await f.job(third.jobKey), { status: JobStatus.Open, escrow: 30n * USDC, collateral: 5n * USDC }, 'the job it re-entered for is untouched')
  await swallowed(facilityCall('claimHeld', [h.asset, h.borrower]), third, 30n * USDC, 5n * USDC)
  t.equal(await held(), 40n * USDC, 'a claim of the held collateral from the hook is refused too: still held')

  // The held collateral claimed, the borrower re-entering the claim from its hook: paid once.
  await h.owner.wallet.writeContract({ address: h.borrower, abi: h.abi, functionName: 'arm', args: [facilityCall('claimHeld', [h.asset, h.borrower]), 2] }).then((hash) => f.publicClient.waitForTransactionReceipt({ hash }))
  const before = await f.balance(h.borrower, h.asset)
  await f.call(h.owner, 'claimHeld', [h.asset, h.borrower])
  t.equal((await f.balance(h.borrower, h.asset)) - before, 40n * USDC, 'the held collateral paid once')
  t.equal(await held(), 0n)
  t.equal(await read<bigint>(h, 'taken'), 0n, 'the re-entered claim refused')
  t.equal(await f.balance(h.borrower, h.asset), borrowerBefore + 40n * USDC + 10n * USDC + 5n * USDC, 'the borrower got back exactly the collateral it posted')
  t.equal(await f.balance(f.facility, h.asset), 0n, 'the contract holds nothing of the token')
  await f.checkConservation(t, h.asset)
})
